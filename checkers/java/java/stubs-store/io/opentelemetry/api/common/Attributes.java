package io.opentelemetry.api.common;
public interface Attributes { }
