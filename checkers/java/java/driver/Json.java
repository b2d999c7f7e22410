// The drivers' wire format: a small JSON reader and writer for the protocol's values (objects,
// lists, strings, booleans, null and long integers), and the error a request missing a field gets.

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Json {
    static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message);
        }
    }

    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(String text) {
        Json p = new Json(text);
        Object v = p.value();
        p.space();
        if (p.i != text.length()) {
            throw new IllegalArgumentException("trailing characters at " + p.i);
        }
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("not a JSON object");
        }
        return (Map<String, Object>) v;
    }

    static Object need(Map<String, Object> req, String key) {
        if (!req.containsKey(key) || req.get(key) == null) {
            throw new BadRequest("request " + req.get("op") + " needs \"" + key + "\"");
        }
        return req.get(key);
    }

    static long longOf(Map<String, Object> req, String key) {
        Object v = need(req, key);
        if (!(v instanceof Long)) {
            throw new BadRequest("\"" + key + "\" must be an integer, got " + v);
        }
        return (Long) v;
    }

    static boolean bool(Map<String, Object> req, String key) {
        Object v = need(req, key);
        if (!(v instanceof Boolean)) {
            throw new BadRequest("\"" + key + "\" must be true or false, got " + v);
        }
        return (Boolean) v;
    }

    static String string(Map<String, Object> req, String key) {
        Object v = need(req, key);
        if (!(v instanceof String)) {
            throw new BadRequest("\"" + key + "\" must be a string, got " + v);
        }
        return (String) v;
    }

    static List<?> list(Map<String, Object> req, String key) {
        Object v = need(req, key);
        if (!(v instanceof List)) {
            throw new BadRequest("\"" + key + "\" must be a list, got " + v);
        }
        return (List<?>) v;
    }

    static List<Long> longs(Map<String, Object> req, String key) {
        List<Long> out = new ArrayList<>();
        for (Object o : list(req, key)) {
            if (!(o instanceof Long)) {
                throw new BadRequest("\"" + key + "\" must hold integers, got " + o);
            }
            out.add((Long) o);
        }
        return out;
    }

    private void space() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }

    private Object value() {
        space();
        if (i >= s.length()) {
            throw new IllegalArgumentException("unexpected end");
        }
        char c = s.charAt(i);
        if (c == '{') {
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            space();
            if (s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                space();
                String k = (String) value();
                space();
                expect(':');
                m.put(k, value());
                space();
                if (s.charAt(i) == ',') {
                    i++;
                } else {
                    expect('}');
                    return m;
                }
            }
        }
        if (c == '[') {
            List<Object> l = new ArrayList<>();
            i++;
            space();
            if (s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                l.add(value());
                space();
                if (s.charAt(i) == ',') {
                    i++;
                } else {
                    expect(']');
                    return l;
                }
            }
        }
        if (c == '"') {
            StringBuilder b = new StringBuilder();
            i++;
            while (s.charAt(i) != '"') {
                char ch = s.charAt(i++);
                if (ch == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n': b.append('\n'); break;
                        case 't': b.append('\t'); break;
                        case 'r': b.append('\r'); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                        default: b.append(e);
                    }
                } else {
                    b.append(ch);
                }
            }
            i++;
            return b.toString();
        }
        if (s.startsWith("true", i)) {
            i += 4;
            return Boolean.TRUE;
        }
        if (s.startsWith("false", i)) {
            i += 5;
            return Boolean.FALSE;
        }
        if (s.startsWith("null", i)) {
            i += 4;
            return null;
        }
        int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
        String num = s.substring(start, i);
        if (num.isEmpty()) {
            throw new IllegalArgumentException("unexpected character '" + c + "' at " + start);
        }
        try {
            return Long.parseLong(num);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a long integer: " + num);
        }
    }

    private void expect(char c) {
        if (i >= s.length() || s.charAt(i) != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + i);
        }
        i++;
    }

    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v);
        return b.toString();
    }

    private static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String) {
            b.append('"');
            for (char c : ((String) v).toCharArray()) {
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            b.append('"');
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object o : (Iterable<?>) v) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, o);
            }
            b.append(']');
        } else {
            write(b, String.valueOf(v));
        }
    }
}
