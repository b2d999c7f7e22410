package io.opentelemetry.api.metrics;
public interface Meter { }
