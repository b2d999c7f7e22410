// Shadow of RocketMQ's RemotingMetricsManager (OpenTelemetry SDK, not in Debian): inert.
package org.apache.rocketmq.remoting.metrics;

import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.sdk.metrics.InstrumentSelector;
import io.opentelemetry.sdk.metrics.ViewBuilder;
import java.util.ArrayList;
import java.util.List;
import io.netty.util.concurrent.Future;
import java.util.function.Supplier;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.common.metrics.NopLongHistogram;

public class RemotingMetricsManager {
    public static LongHistogram rpcLatency = new NopLongHistogram();
    public static Supplier<AttributesBuilder> attributesBuilderSupplier;

    public static AttributesBuilder newAttributesBuilder() {
        return new AttributesBuilder() {
            public io.opentelemetry.api.common.Attributes build() {
                return new io.opentelemetry.api.common.Attributes() { };
            }
            public AttributesBuilder put(String key, String value) { return this; }
            public AttributesBuilder put(String key, long value) { return this; }
            public AttributesBuilder put(String key, boolean value) { return this; }
        };
    }

    public static void initMetrics(Meter meter, Supplier<AttributesBuilder> supplier) {
    }

    public static List<Pair<InstrumentSelector, ViewBuilder>> getMetricsView() {
        return new ArrayList<>();
    }

    public static String getWriteAndFlushResult(Future<?> future) {
        return future.isSuccess() ? "success" : "write_channel_failed";
    }
}
