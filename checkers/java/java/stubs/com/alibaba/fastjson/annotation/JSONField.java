// Stub of fastjson 1's field annotation (not in Debian); the driver never serialises with it.
package com.alibaba.fastjson.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER})
public @interface JSONField {
    String name() default "";

    boolean serialize() default true;

    boolean deserialize() default true;
}
