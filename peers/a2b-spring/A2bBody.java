// A2bBody.java - what the routes read besides the path, with the rules of
// src/a2b/a2b_body.c as peers/a2b-node/a2b_body.js has them: strict JSON
// object bodies whose wanted fields are strings or null, the /transfers
// query string, path ids and dates.

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

final class A2bBody {
    private A2bBody() {}

    static final int MAX_DEPTH = 32;  // A2B_BODY_MAX_DEPTH
    private static final JsonFactory JSON = new JsonFactory();

    // A body a2b-server refuses, with its message (Jackson's for syntax).
    static final class BodyError extends Exception {
        private static final long serialVersionUID = 1L;

        BodyError(String message) {
            super(message, null, false, false);
        }
    }

    private static void checkString(String s) throws BodyError {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == 0)
                throw new BodyError("NUL in a string");
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)))
                i++;
            else if (Character.isSurrogate(c))
                throw new BodyError("unpaired surrogate");
        }
    }

    // body: the raw bytes. The wanted top-level fields (string or null;
    // absent is null; the last of duplicates wins, as JSON.parse has it).
    static Map<String, String> parse(byte[] body, String... names) throws BodyError {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                       .onMalformedInput(CodingErrorAction.REPORT)
                       .onUnmappableCharacter(CodingErrorAction.REPORT)
                       .decode(ByteBuffer.wrap(body))
                       .toString();
        } catch (CharacterCodingException e) {
            throw new BodyError("invalid UTF-8");
        }
        int i = 0;
        while (i < text.length() && " \t\r\n".indexOf(text.charAt(i)) >= 0)
            i++;
        if (i == text.length() || text.charAt(i) != '{')
            throw new BodyError("the body must be a JSON object");
        Map<String, String> out = new HashMap<>();
        try (JsonParser p = JSON.createParser(text)) {
            int depth = 0;
            String field = null;
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                switch (t) {
                case START_OBJECT:
                case START_ARRAY:
                    if (depth == 1 && field != null && contains(names, field))
                        throw new BodyError("a field must be a string or null");
                    if (++depth > MAX_DEPTH)
                        throw new BodyError("nested too deeply");
                    break;
                case END_OBJECT:
                case END_ARRAY:
                    depth--;
                    break;
                case FIELD_NAME:
                    checkString(p.getCurrentName());
                    if (depth == 1)
                        field = p.getCurrentName();
                    continue;  // field stays set for the value that follows
                case VALUE_STRING:
                    checkString(p.getText());
                    if (depth == 1 && contains(names, field))
                        out.put(field, p.getText());
                    break;
                case VALUE_NULL:
                    if (depth == 1 && contains(names, field))
                        out.put(field, null);
                    break;
                default:
                    if (depth == 1 && contains(names, field))
                        throw new BodyError("a field must be a string or null");
                }
                if (depth == 1)
                    field = null;
                if (depth == 0 && p.nextToken() != null)
                    throw new BodyError("text after the JSON object");
            }
            if (depth != 0)
                throw new BodyError("unexpected end of the body");
        } catch (JsonProcessingException e) {
            throw new BodyError("invalid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new BodyError("invalid JSON: " + e.getMessage());
        }
        return out;
    }

    private static boolean contains(String[] names, String field) {
        if (field != null)
            for (String n : names)
                if (n.equals(field))
                    return true;
        return false;
    }

    private static int hexval(char c) {
        return Character.digit(c, 16);
    }

    // Percent-decodes s ('+' is a space) into a string of bytes, one char
    // each (compared with ASCII names and checked as digits only); null when
    // malformed, or when it holds a NUL or cap - 1 bytes or more.
    private static String decode(String s, int cap) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '+') {
                c = ' ';
            } else if (c == '%') {
                if (i + 2 >= s.length())
                    return null;
                int hi = hexval(s.charAt(i + 1)), lo = hexval(s.charAt(i + 2));
                if (hi < 0 || lo < 0)
                    return null;
                c = (char) (hi << 4 | lo);
                i += 2;
            }
            if (c == 0 || out.length() + 1 >= cap)
                return null;
            out.append(c);
        }
        return out.toString();
    }

    // What queryGet found: absent, malformed, or a value.
    static final String MALFORMED = new String("malformed");

    // a2b_query_get: the value when present, null when absent, MALFORMED
    // (compared by identity) when malformed. The first occurrence wins.
    static String queryGet(String query, String name, int cap) {
        if (query == null || query.isEmpty())
            return null;
        int p = 0;
        while (p < query.length()) {
            int end = query.indexOf('&', p);
            if (end < 0)
                end = query.length();
            String part = query.substring(p, end);
            int eq = part.indexOf('=');
            String rawKey = eq >= 0 ? part.substring(0, eq) : part;
            String key = decode(rawKey, 64);
            if (key == null && rawKey.length() < 64)
                return MALFORMED;
            if (name.equals(key)) {
                String v = decode(eq >= 0 ? part.substring(eq + 1) : "", cap);
                return v == null ? MALFORMED : v;
            }
            p = end + 1;
        }
        return null;
    }

    private static final Pattern ID = Pattern.compile("[0-9]{1,18}");
    private static final Pattern DAY = Pattern.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}");
    private static final int[] MDAYS = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    // a2b_parse_id: 1 to 18 ASCII digits.
    static boolean isId(String s) {
        return ID.matcher(s).matches();
    }

    // a2b_data_parse_day: a real YYYY-MM-DD.
    static boolean isDay(String s) {
        if (!DAY.matcher(s).matches())
            return false;
        int y = Integer.parseInt(s.substring(0, 4)), m = Integer.parseInt(s.substring(5, 7));
        int d = Integer.parseInt(s.substring(8, 10));
        if (m < 1 || m > 12 || d < 1 || d > MDAYS[m - 1])
            return false;
        boolean leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return !(m == 2 && d == 29 && !leap);
    }
}
