package io.opentelemetry.api.metrics;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.context.Context;
public interface LongHistogram {
    void record(long value);
    void record(long value, Attributes attributes);
    void record(long value, Attributes attributes, Context context);
}
