package io.opentelemetry.api.common;
public interface AttributesBuilder {
    Attributes build();
    AttributesBuilder put(String key, String value);
    AttributesBuilder put(String key, long value);
    AttributesBuilder put(String key, boolean value);
}
