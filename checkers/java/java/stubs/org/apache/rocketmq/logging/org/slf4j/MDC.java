package org.apache.rocketmq.logging.org.slf4j;
public class MDC {
    public static void put(String key, String val) { }
    public static String get(String key) { return null; }
    public static void remove(String key) { }
    public static void clear() { }
}
