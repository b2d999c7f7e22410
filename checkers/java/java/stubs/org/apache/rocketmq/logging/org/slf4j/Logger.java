// Stand-in for RocketMQ's shaded slf4j Logger (rocketmq-logging is not in Debian). Silent unless
// the JVM is started with -Drmqcheck.logDir=DIR: then each record goes to DIR/broker.log,
// store.log, storeerror.log or controller.log, as rmq.broker.logback.xml and
// rmq.controller.logback.xml route the logger names, in their pattern
// "%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m%n", a throwable's stack trace after it. Every record
// is written (logback's async appenders may drop INFO lines under load; these do not).
package org.apache.rocketmq.logging.org.slf4j;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.text.SimpleDateFormat;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import java.util.TimeZone;

public class Logger {
    private static final String DIR = System.getProperty("rmqcheck.logDir");
    private static final Map<String, OutputStream> FILES = new HashMap<>();
    private static final SimpleDateFormat TIME = new SimpleDateFormat("yyy-MM-dd HH:mm:ss");

    static {
        TIME.setTimeZone(TimeZone.getTimeZone("GMT+8"));
    }

    private final String name;
    private final String file;  // null: silent

    public Logger() {
        this("rmqcheck");
    }

    public Logger(String name) {
        this.name = name;
        this.file = DIR == null ? null : fileOf(name);
    }

    private static String fileOf(String name) {
        switch (name) {
            case "RocketmqStore":
                return "store.log";
            case "RocketmqStoreError":
                return "storeerror.log";
            case "RocketmqController":
                return "controller.log";
            case "RocketmqCommon":
                return System.getProperty("rmqcheck.logRole", "broker").equals("controller") ? "controller.log" : "broker.log";
            default:
                return "broker.log";
        }
    }

    public String getName() {
        return name;
    }

    private void log(String level, String format, Object[] args) {
        if (file == null) {
            return;
        }
        StringBuilder text = new StringBuilder();
        int used = 0;
        int from = 0;
        String message = format == null ? "null" : format;
        for (int at = message.indexOf("{}"); at >= 0 && used < args.length; at = message.indexOf("{}", from)) {
            text.append(message, from, at).append(render(args[used++]));
            from = at + 2;
        }
        text.append(message.substring(from));
        Throwable thrown = used < args.length && args[args.length - 1] instanceof Throwable
            ? (Throwable) args[args.length - 1] : null;
        String record;
        synchronized (FILES) {
            record = TIME.format(new Date()) + " " + level + " " + Thread.currentThread().getName() + " - " + text + "\n";
        }
        if (thrown != null) {
            StringWriter trace = new StringWriter();
            thrown.printStackTrace(new PrintWriter(trace));
            record += trace;
        }
        write(file, record.getBytes(StandardCharsets.UTF_8));
    }

    private static String render(Object arg) {
        if (arg instanceof Object[]) {
            return java.util.Arrays.deepToString((Object[]) arg);
        }
        return String.valueOf(arg);
    }

    private static void write(String file, byte[] bytes) {
        synchronized (FILES) {
            try {
                OutputStream out = FILES.get(file);
                if (out == null) {
                    new java.io.File(DIR).mkdirs();
                    out = new FileOutputStream(new java.io.File(DIR, file), true);
                    FILES.put(file, out);
                }
                out.write(bytes);
                out.flush();
            } catch (IOException ignored) {
                // a full disk: the harness reports the store's own failure
            }
        }
    }

    public boolean isTraceEnabled() {
        return false;
    }

    public void trace(String msg) {
    }

    public void trace(String format, Object arg) {
    }

    public void trace(String format, Object arg1, Object arg2) {
    }

    public void trace(String format, Object... arguments) {
    }

    public void trace(String msg, Throwable t) {
    }

    public boolean isDebugEnabled() {
        return false;
    }

    public void debug(String msg) {
    }

    public void debug(String format, Object arg) {
    }

    public void debug(String format, Object arg1, Object arg2) {
    }

    public void debug(String format, Object... arguments) {
    }

    public void debug(String msg, Throwable t) {
    }

    public boolean isInfoEnabled() {
        return file != null;
    }

    public void info(String msg) {
        log("INFO", msg, new Object[0]);
    }

    public void info(String format, Object arg) {
        log("INFO", format, new Object[] {arg});
    }

    public void info(String format, Object arg1, Object arg2) {
        log("INFO", format, new Object[] {arg1, arg2});
    }

    public void info(String format, Object... arguments) {
        log("INFO", format, arguments);
    }

    public void info(String msg, Throwable t) {
        log("INFO", msg, new Object[] {t});
    }

    public boolean isWarnEnabled() {
        return file != null;
    }

    public void warn(String msg) {
        log("WARN", msg, new Object[0]);
    }

    public void warn(String format, Object arg) {
        log("WARN", format, new Object[] {arg});
    }

    public void warn(String format, Object arg1, Object arg2) {
        log("WARN", format, new Object[] {arg1, arg2});
    }

    public void warn(String format, Object... arguments) {
        log("WARN", format, arguments);
    }

    public void warn(String msg, Throwable t) {
        log("WARN", msg, new Object[] {t});
    }

    public boolean isErrorEnabled() {
        return file != null;
    }

    public void error(String msg) {
        log("ERROR", msg, new Object[0]);
    }

    public void error(String format, Object arg) {
        log("ERROR", format, new Object[] {arg});
    }

    public void error(String format, Object arg1, Object arg2) {
        log("ERROR", format, new Object[] {arg1, arg2});
    }

    public void error(String format, Object... arguments) {
        log("ERROR", format, arguments);
    }

    public void error(String msg, Throwable t) {
        log("ERROR", msg, new Object[] {t});
    }
}
