package io.opentelemetry.sdk.metrics;
public class ViewBuilder { }
