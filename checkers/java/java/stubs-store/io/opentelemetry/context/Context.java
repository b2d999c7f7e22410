package io.opentelemetry.context;
public interface Context { }
