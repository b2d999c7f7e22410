package org.awaitility.core;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * rmqcheck's stand-in for Awaitility 4's ConditionFactory, for RocketMQ's own tests (`rmqcheck
 * findings --check`): Debian does not package Awaitility. It covers the calls the store's and the
 * broker's tests make: atMost/timeout, atLeast, pollInterval, pollDelay, the no-op connectives
 * (with, and, given, await), until(Callable&lt;Boolean&gt;), until(Callable, Predicate) and
 * untilAsserted. As in Awaitility: immutable (each setting returns a new factory), at most 10 s
 * and a poll every 100 ms unless told, the first poll after the poll delay (by default the poll
 * interval), the condition evaluated in the calling thread; an exception the condition throws
 * ends the wait at once (untilAsserted retries an AssertionError); a condition met before
 * atLeast, or not met by atMost, throws ConditionTimeoutException. Not a copy of Awaitility.
 */
public final class ConditionFactory {
    static final long DEFAULT_AT_MOST_MS = 10_000;
    static final long DEFAULT_POLL_MS = 100;
    public static final ConditionFactory DEFAULT = new ConditionFactory(DEFAULT_AT_MOST_MS, 0, DEFAULT_POLL_MS, -1);

    private final long atMostMs;
    private final long atLeastMs;
    private final long pollMs;
    private final long delayMs;  // -1: the poll interval

    private ConditionFactory(long atMostMs, long atLeastMs, long pollMs, long delayMs) {
        this.atMostMs = atMostMs;
        this.atLeastMs = atLeastMs;
        this.pollMs = pollMs;
        this.delayMs = delayMs;
    }

    public ConditionFactory atMost(Duration timeout) {
        return new ConditionFactory(timeout.toMillis(), atLeastMs, pollMs, delayMs);
    }

    public ConditionFactory atMost(long value, TimeUnit unit) {
        return atMost(Duration.ofMillis(unit.toMillis(value)));
    }

    public ConditionFactory timeout(Duration timeout) {
        return atMost(timeout);
    }

    public ConditionFactory timeout(long value, TimeUnit unit) {
        return atMost(value, unit);
    }

    public ConditionFactory atLeast(Duration least) {
        return new ConditionFactory(atMostMs, least.toMillis(), pollMs, delayMs);
    }

    public ConditionFactory atLeast(long value, TimeUnit unit) {
        return atLeast(Duration.ofMillis(unit.toMillis(value)));
    }

    public ConditionFactory pollInterval(Duration interval) {
        return new ConditionFactory(atMostMs, atLeastMs, Math.max(1, interval.toMillis()), delayMs);
    }

    public ConditionFactory pollInterval(long value, TimeUnit unit) {
        return pollInterval(Duration.ofMillis(unit.toMillis(value)));
    }

    public ConditionFactory pollDelay(Duration delay) {
        return new ConditionFactory(atMostMs, atLeastMs, pollMs, Math.max(0, delay.toMillis()));
    }

    public ConditionFactory pollDelay(long value, TimeUnit unit) {
        return pollDelay(Duration.ofMillis(unit.toMillis(value)));
    }

    public ConditionFactory with() {
        return this;
    }

    public ConditionFactory and() {
        return this;
    }

    public ConditionFactory given() {
        return this;
    }

    public ConditionFactory await() {
        return this;
    }

    public ConditionFactory await(String alias) {
        return this;
    }

    public void until(Callable<Boolean> condition) {
        until(condition, Boolean.TRUE::equals);
    }

    public <T> T until(Callable<T> supplier, Predicate<? super T> predicate) {
        long start = System.nanoTime();
        sleep(Math.min(delayMs < 0 ? pollMs : delayMs, atMostMs));
        while (true) {
            T value;
            try {
                value = supplier.call();
            } catch (Exception e) {
                throw ConditionFactory.<RuntimeException>sneaky(e);
            }
            long elapsed = elapsedMs(start);
            if (predicate.test(value)) {
                if (elapsed < atLeastMs) {
                    throw new ConditionTimeoutException("Condition was evaluated in " + elapsed
                        + " ms, earlier than the expected minimum of " + atLeastMs + " ms");
                }
                return value;
            }
            if (elapsed >= atMostMs) {
                throw new ConditionTimeoutException("Condition was not fulfilled within " + atMostMs
                    + " ms (last value: " + value + ")", value instanceof Throwable ? (Throwable) value : null);
            }
            sleep(Math.min(pollMs, Math.max(1, atMostMs - elapsed)));
        }
    }

    public void untilAsserted(ThrowingRunnable assertion) {
        until(() -> {
            try {
                assertion.run();
                return null;
            } catch (AssertionError e) {
                return e;
            } catch (Throwable t) {
                throw ConditionFactory.<RuntimeException>sneaky(t);
            }
        }, failed -> failed == null);
    }

    private static long elapsedMs(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConditionTimeoutException("interrupted while waiting", e);
        }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable t) throws E {
        throw (E) t;
    }
}
