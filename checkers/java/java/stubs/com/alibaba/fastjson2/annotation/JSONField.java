// Stub of fastjson2's field annotation (not in Debian); the driver never serialises with it.
package com.alibaba.fastjson2.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER})
public @interface JSONField {
    String name() default "";

    boolean value() default false;

    String[] alternateNames() default {};

    boolean serialize() default true;

    boolean deserialize() default true;

    Class<?> serializeUsing() default Void.class;

    Class<?> deserializeUsing() default Void.class;
}
