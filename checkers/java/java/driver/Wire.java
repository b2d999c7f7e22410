// The drivers' loop: one JSON request per line on stdin, one JSON answer per line on stdout, in a
// scratch directory that is removed at the end. A request the driver cannot read gets
// {"ok":false,"error":...}; one on which RocketMQ's code threw gets {"ok":false,"exception":...}.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

final class Wire {
    interface Driver {
        /** The answer to one request, or null for an op it does not know. */
        Map<String, Object> answer(String op, Map<String, Object> request) throws Throwable;
    }

    interface Factory {
        Driver start(Path dir) throws Exception;
    }

    private Wire() {
    }

    /** Serve stdin until it ends, then exit: RocketMQ's executors are not daemon threads. */
    static void serve(String[] args, String prefix, Factory factory) throws Exception {
        Path base = args.length > 0 ? Path.of(args[0]) : Path.of(System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(base, prefix);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        try {
            Driver driver = null;
            String broken = null;
            try {
                driver = factory.start(dir);
            } catch (IllegalStateException e) { // an older or newer RocketMQ: every answer says what it lacks
                broken = e.getMessage();
            }
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                out.write(broken != null ? error(broken) : answer(driver, line));
                out.write('\n');
                if (!in.ready()) {
                    out.flush();
                }
            }
            out.flush();
        } finally {
            deleteTree(dir.toFile());
        }
        System.exit(0);
    }

    static String answer(Driver driver, String line) {
        Map<String, Object> req;
        try {
            req = Json.object(line);
        } catch (RuntimeException e) {
            return error("bad request: " + e.getMessage());
        }
        try {
            Object op = req.get("op");
            if (!(op instanceof String)) {
                return error("request has no \"op\"");
            }
            if ("ping".equals(op)) {
                return "{\"ok\":true}";
            }
            Map<String, Object> m = driver.answer((String) op, req);
            return m == null ? error("unknown op " + op) : Json.write(m);
        } catch (Json.BadRequest e) {
            return error(e.getMessage());
        } catch (Throwable t) {
            Throwable cause = t instanceof InvocationTargetException ? t.getCause() : t;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("ok", false);
            m.put("exception", cause.getClass().getName() + ": " + cause.getMessage());
            return Json.write(m);
        }
    }

    static String error(String message) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", false);
        m.put("error", message);
        return Json.write(m);
    }

    static Map<String, Object> ok() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", true);
        return m;
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }
}
