// Stub of the few fastjson 1 members RocketMQ's RemotingSerializable calls (fastjson is not in
// Debian). Encoding keeps the object for the driver to read and returns a placeholder string;
// decoding is never reached by the classes the driver loads, so it fails loudly.
package com.alibaba.fastjson;

import com.alibaba.fastjson.serializer.SerializerFeature;
import java.util.List;

public abstract class JSON {
    /** The object most recently encoded: a response body, read by the driver. */
    public static Object lastEncoded;

    public static String toJSONString(Object object, boolean prettyFormat) {
        lastEncoded = object;
        return "{}";
    }

    public static String toJSONString(Object object, SerializerFeature... features) {
        lastEncoded = object;
        return "{}";
    }

    public static String toJSONString(Object object) {
        lastEncoded = object;
        return "{}";
    }

    public static <T> T parseObject(String text, Class<T> clazz) {
        throw new UnsupportedOperationException("rmqcheck's fastjson stub does not decode");
    }

    public static <T> T parseObject(byte[] bytes, Class<T> clazz) {
        throw new UnsupportedOperationException("rmqcheck's fastjson stub does not decode");
    }

    public static <T> List<T> parseArray(String text, Class<T> clazz) {
        throw new UnsupportedOperationException("rmqcheck's fastjson stub does not decode");
    }

    public static <T> T parseObject(String text, java.lang.reflect.Type type, com.alibaba.fastjson.parser.Feature... features) {
        throw new UnsupportedOperationException("rmqcheck's fastjson stub does not decode");
    }

    public static <T> T parseObject(String text, TypeReference<T> type, com.alibaba.fastjson.parser.Feature... features) {
        throw new UnsupportedOperationException("rmqcheck's fastjson stub does not decode");
    }

    public static void writeJSONString(java.io.Writer writer, Object object, SerializerFeature... features) {
        lastEncoded = object;
    }
}
