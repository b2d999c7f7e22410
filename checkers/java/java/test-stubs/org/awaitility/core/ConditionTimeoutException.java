package org.awaitility.core;

/** rmqcheck's stand-in for Awaitility 4's ConditionTimeoutException: the condition was not met in time. */
public class ConditionTimeoutException extends RuntimeException {
    public ConditionTimeoutException(String message) {
        super(message);
    }

    public ConditionTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
