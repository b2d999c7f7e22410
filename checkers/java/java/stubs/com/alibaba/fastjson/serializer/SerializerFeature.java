// Stub: the constants RocketMQ's classes name when encoding.
package com.alibaba.fastjson.serializer;

public enum SerializerFeature {
    PrettyFormat, WriteMapNullValue, DisableCircularReferenceDetect, WriteNullListAsEmpty, BrowserCompatible
}
