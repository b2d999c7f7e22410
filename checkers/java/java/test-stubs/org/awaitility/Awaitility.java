package org.awaitility;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionFactory;

/**
 * rmqcheck's stand-in for Awaitility 4's entry points, for RocketMQ's own tests (`rmqcheck
 * findings --check`): Debian does not package Awaitility. Only what the store's and the broker's
 * tests call; see ConditionFactory for the waiting itself.
 */
public final class Awaitility {
    private Awaitility() {
    }

    public static ConditionFactory await() {
        return ConditionFactory.DEFAULT;
    }

    public static ConditionFactory await(String alias) {
        return ConditionFactory.DEFAULT;
    }

    public static ConditionFactory with() {
        return ConditionFactory.DEFAULT;
    }

    public static ConditionFactory given() {
        return ConditionFactory.DEFAULT;
    }

    public static ConditionFactory waitAtMost(Duration timeout) {
        return ConditionFactory.DEFAULT.atMost(timeout);
    }

    public static ConditionFactory waitAtMost(long value, TimeUnit unit) {
        return ConditionFactory.DEFAULT.atMost(value, unit);
    }
}
