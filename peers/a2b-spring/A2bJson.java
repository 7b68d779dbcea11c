// A2bJson.java - the JSON bodies of src/a2b/a2b_api.c, byte for byte, as
// peers/a2b-node/a2b_json.js writes them: compact, the reference's field
// order, strings escaped as src/core/json.c does (only '"', '\\' and
// control characters; \n and \t short, the others backslash-u00xx in lower case;
// UTF-8 as it is), numbers as C's %.15g (or %.17g when that does not read
// back), prices as fixed-point cents.
//
// Rows come from JDBC; columns are numbered from 1, and each reader takes
// the columns from c on. Ids, counts and cents are read as PostgreSQL's
// text (getString), printed as they are.

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.sql.ResultSet;
import java.sql.SQLException;

final class A2bJson {
    private A2bJson() {}

    // One row, written into out from column c on.
    interface Reader {
        void write(StringBuilder out, ResultSet r, int c) throws SQLException;
    }

    // key (with its comma and colon), then s as a JSON string.
    static void text(StringBuilder out, String key, String s) {
        str(out.append(key), s);
    }

    static void str(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
            case '"': out.append("\\\""); break;
            case '\\': out.append("\\\\"); break;
            case '\n': out.append("\\n"); break;
            case '\t': out.append("\\t"); break;
            default:
                if (ch < 0x20)
                    out.append("\\u00").append(Character.forDigit(ch >> 4, 16)).append(Character.forDigit(ch & 15, 16));
                else
                    out.append(ch);
            }
        }
        out.append('"');
    }

    // C's %.<p>g of a finite, non-zero v: Java's %g neither strips zeros
    // nor switches to an exponent as C does. BigDecimal(v) is v exactly, so
    // the rounding is glibc's (to nearest, ties to even).
    static String formatG(double v, int p) {
        BigDecimal d = new BigDecimal(v).round(new MathContext(p, RoundingMode.HALF_EVEN)).stripTrailingZeros();
        int exp = d.precision() - d.scale() - 1;
        if (exp >= -4 && exp < p)
            return d.toPlainString();
        String digits = d.unscaledValue().abs().toString();
        StringBuilder s = new StringBuilder();
        if (d.signum() < 0)
            s.append('-');
        s.append(digits.charAt(0));
        if (digits.length() > 1)
            s.append('.').append(digits, 1, digits.length());
        int ax = Math.abs(exp);
        return s.append(exp < 0 ? "e-" : "e+").append(ax < 10 ? "0" : "").append(ax).toString();
    }

    // json_number: the shorter of %.15g and %.17g that reads back.
    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v))
            return "null";
        if (v == 0)
            return 1 / v < 0 ? "-0" : "0";
        String s = formatG(v, 15);
        return Double.parseDouble(s) == v ? s : formatG(v, 17);
    }

    // json_fixed(cents, 2), cents as PostgreSQL's bigint text.
    static void cents(StringBuilder out, String s) {
        boolean neg = s.startsWith("-");
        String digits = neg ? s.substring(1) : s;
        while (digits.length() < 3)
            digits = "0" + digits;
        String whole = digits.substring(0, digits.length() - 2).replaceFirst("^0+(?=\\d)", "");
        out.append(neg ? "-" : "").append(whole).append('.').append(digits, digits.length() - 2, digits.length());
    }

    static void country(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"countryId\":").append(r.getString(c));
        text(o, ",\"name\":", r.getString(c + 1));
        text(o, ",\"code\":", r.getString(c + 2));
        o.append('}');
    }

    static void city(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"cityId\":").append(r.getString(c)).append(",\"country\":");
        country(o, r, c + 3);
        text(o, ",\"name\":", r.getString(c + 1));
        text(o, ",\"code\":", r.getString(c + 2));
        o.append('}');
    }

    static void location(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"locationId\":").append(r.getString(c)).append(",\"city\":");
        city(o, r, c + 3);
        o.append(",\"latitude\":").append(num(r.getDouble(c + 1)));
        o.append(",\"longitude\":").append(num(r.getDouble(c + 2))).append('}');
    }

    private static String cut(String s, int bytes) {
        return s.length() <= bytes ? s : s.substring(0, bytes);
    }

    // json_transfer: duration as a tsrange's text, each bound cut at 40
    // bytes as the C snprintf does (they are 19 ASCII characters).
    static void transfer(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"transferId\":").append(r.getString(c)).append(",\"origin\":");
        location(o, r, c + 1);
        o.append(",\"destination\":");
        location(o, r, c + 10);
        o.append(",\"capacity\":").append(r.getString(c + 19));
        text(o, ",\"duration\":", "[\"" + cut(r.getString(c + 20), 40) + "\",\"" + cut(r.getString(c + 21), 40) + "\")");
        o.append(",\"price\":");
        cents(o, r.getString(c + 22));
        text(o, ",\"description\":", r.getString(c + 23));
        o.append('}');
    }

    // json_user: "first last" (the routes keep each name within 50 bytes,
    // where the C snprintf would cut it).
    static void user(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"id\":").append(r.getString(c));
        text(o, ",\"name\":", r.getString(c + 1) + " " + r.getString(c + 2));
        text(o, ",\"email\":", r.getString(c + 3));
        text(o, ",\"phone\":", r.getString(c + 4));
        o.append('}');
    }

    static void booking(StringBuilder o, ResultSet r, int c) throws SQLException {
        o.append("{\"user\":");
        user(o, r, c);
        o.append(",\"transfer\":");
        transfer(o, r, c + 5);
        text(o, ",\"state\":", r.getString(c + 29));
        text(o, ",\"description\":", r.getString(c + 30));
        o.append('}');
    }

    // The rows from r's current one on (which the caller has moved to).
    static String list(ResultSet r, Reader one, int c) throws SQLException {
        StringBuilder o = new StringBuilder(1024).append('[');
        boolean first = true;
        do {
            if (!first)
                o.append(',');
            first = false;
            one.write(o, r, c);
        } while (r.next());
        return o.append(']').toString();
    }

    static String one(ResultSet r, Reader one, int c) throws SQLException {
        StringBuilder o = new StringBuilder(512);
        one.write(o, r, c);
        return o.toString();
    }

    private static String statusName(int status) {
        switch (status) {
        case 400: return "BAD_REQUEST";
        case 404: return "NOT_FOUND";
        case 405: return "METHOD_NOT_ALLOWED";
        case 409: return "CONFLICT";
        case 413: return "PAYLOAD_TOO_LARGE";
        case 415: return "UNSUPPORTED_MEDIA_TYPE";
        case 503: return "SERVICE_UNAVAILABLE";
        default: return "INTERNAL_SERVER_ERROR";
        }
    }

    // a2b_result_error.
    static String error(int status, String message) {
        StringBuilder o = new StringBuilder(96);
        o.append("{\"status\":\"").append(statusName(status)).append("\",\"code\":").append(status);
        text(o, ",\"message\":", message);
        return o.append('}').toString();
    }
}
