// Shadow of RocketMQ's DefaultStoreMetricsManager (OpenTelemetry, not in Debian): the members the
// message store and timer store call, all inert.
package org.apache.rocketmq.store.metrics;

import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.sdk.metrics.InstrumentSelector;
import io.opentelemetry.sdk.metrics.ViewBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.store.DefaultMessageStore;

public class DefaultStoreMetricsManager {
    public DefaultStoreMetricsManager() {
    }

    public List<Pair<InstrumentSelector, ViewBuilder>> getMetricsView() {
        return new ArrayList<>();
    }

    public void init(Meter meter, Supplier<AttributesBuilder> attributesBuilderSupplier, DefaultMessageStore messageStore) {
    }

    public void incTimerDequeueCount(String topic) {
    }

    public void incTimerEnqueueCount(String topic) {
    }

    public AttributesBuilder newAttributesBuilder() {
        throw new UnsupportedOperationException("metrics are not loaded");
    }

    public LongHistogram getTimerMessageSetLatency() {
        throw new UnsupportedOperationException("metrics are not loaded");
    }
}
