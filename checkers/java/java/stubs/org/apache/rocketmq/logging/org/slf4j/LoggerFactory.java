// Stub of RocketMQ's shaded slf4j factory (rocketmq-logging is not in Debian): every logger is silent.
package org.apache.rocketmq.logging.org.slf4j;

public final class LoggerFactory {
    private static final Logger SILENT = new Logger();

    private LoggerFactory() {
    }

    public static Logger getLogger(String name) {
        return SILENT;
    }

    public static Logger getLogger(Class<?> clazz) {
        return SILENT;
    }
}
