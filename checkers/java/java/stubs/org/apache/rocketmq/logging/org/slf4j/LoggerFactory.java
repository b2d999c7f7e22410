// Stand-in for RocketMQ's shaded slf4j factory (rocketmq-logging is not in Debian): a Logger per
// name, silent unless the JVM has -Drmqcheck.logDir (Logger.java).
package org.apache.rocketmq.logging.org.slf4j;

public final class LoggerFactory {
    private LoggerFactory() {
    }

    public static Logger getLogger(String name) {
        return new Logger(name);
    }

    public static Logger getLogger(Class<?> clazz) {
        return new Logger(clazz.getName());
    }
}
