package org.awaitility.core;

/** rmqcheck's stand-in for Awaitility 4's ThrowingRunnable (untilAsserted's assertion block). */
@FunctionalInterface
public interface ThrowingRunnable {
    void run() throws Throwable;
}
