// A2bSql.java - the statements of src/a2b/a2b_pg.c (its `stmts` table), as
// peers/a2b-node/a2b_sql.js has them, word for word, so that this peer asks
// PostgreSQL what `shootout a2b-server` asks. The schema is not created
// here: `shootout a2b-server --db postgres://... --init` fills schema a2b.
//
// JDBC numbers its parameters by position: each statement is written with
// PostgreSQL's $n and turned into ?s plus, for each ?, the n it stands for
// ($1 and $2 appear twice in `book`).

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class A2bSql {
    final String text;
    final int[] params;  // the 0-based argument each ? is bound to

    private static final Pattern PARAM = Pattern.compile("\\$([0-9]+)");

    private A2bSql(String dollarText) {
        Matcher m = PARAM.matcher(dollarText);
        List<Integer> order = new ArrayList<>();
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            order.add(Integer.parseInt(m.group(1)) - 1);
            m.appendReplacement(out, "?");
        }
        m.appendTail(out);
        text = out.toString();
        params = order.stream().mapToInt(Integer::intValue).toArray();
    }

    private static String locationColumns(String l, String c, String k) {
        return l + ".id, (" + l + ".location->>'latitude')::float8, (" + l + ".location->>'longitude')::float8, "
            + c + ".id, " + c + ".name, " + c + ".code, " + k + ".id, " + k + ".name, " + k + ".code";
    }

    private static final String TRANSFER_COLUMNS =
        "t.id, " + locationColumns("lo", "co", "ko") + ", " + locationColumns("ld", "cd", "kd")
        + ", t.capacity, to_char(lower(t.duration), 'YYYY-MM-DD HH24:MI:SS'),"
        + " to_char(upper(t.duration), 'YYYY-MM-DD HH24:MI:SS'), (t.price::numeric * 100)::bigint,"
        + " t.description";

    private static final String TRANSFER_JOINS =
        " JOIN a2b.locations lo ON lo.id = t.origin JOIN a2b.cities co ON co.id = lo.city_id"
        + " JOIN a2b.countries ko ON ko.id = co.country_id"
        + " JOIN a2b.locations ld ON ld.id = t.destination JOIN a2b.cities cd ON cd.id = ld.city_id"
        + " JOIN a2b.countries kd ON kd.id = cd.country_id";

    private static final String BOOKING_SELECT =
        "SELECT u.id, u.first_name, u.last_name, u.email, u.phone, " + TRANSFER_COLUMNS
        + ", ut.state, ut.description FROM a2b.users_transfers ut JOIN a2b.users u ON u.id = ut.user_id"
        + " JOIN a2b.transfers t ON t.id = ut.transfer_id" + TRANSFER_JOINS;

    // A list and whether its parent exists, in one statement: column 1 is
    // the parent's existence, the list's columns follow (NULL in the one row
    // of an empty list).
    private static A2bSql withParent(String parent, String list, String by) {
        return new A2bSql("SELECT p.ok, q.* FROM (SELECT EXISTS (" + parent + ") AS ok) p LEFT JOIN (" + list
                          + ") q ON true ORDER BY " + by);
    }

    static final A2bSql COUNTRIES = new A2bSql("SELECT id, name, code FROM a2b.countries ORDER BY id");
    static final A2bSql CITIES = withParent(
        "SELECT 1 FROM a2b.countries WHERE id = $1",
        "SELECT c.id, c.name, c.code, k.id, k.name, k.code FROM a2b.cities c"
            + " JOIN a2b.countries k ON k.id = c.country_id WHERE c.country_id = $1",
        "2");
    static final A2bSql LOCATIONS = withParent(
        "SELECT 1 FROM a2b.cities WHERE id = $2 AND country_id = $1",
        "SELECT " + locationColumns("l", "c", "k") + " FROM a2b.locations l"
            + " JOIN a2b.cities c ON c.id = l.city_id"
            + " JOIN a2b.countries k ON k.id = c.country_id"
            + " WHERE l.city_id = $2 AND c.country_id = $1",
        "2");
    static final A2bSql TRANSFERS = new A2bSql(
        "SELECT " + TRANSFER_COLUMNS + " FROM a2b.transfers t" + TRANSFER_JOINS
        + " WHERE t.origin = $1 AND t.destination = $2 AND t.date = $3::date ORDER BY t.id");
    // Columns: user exists, transfer exists, rows inserted. A concurrent
    // duplicate is a conflict, not an error.
    static final A2bSql BOOK = new A2bSql(
        "WITH u AS (SELECT EXISTS (SELECT 1 FROM a2b.users WHERE id = $1) AS ok),"
        + " t AS (SELECT EXISTS (SELECT 1 FROM a2b.transfers WHERE id = $2) AS ok),"
        + " ins AS (INSERT INTO a2b.users_transfers(user_id, transfer_id, state, description)"
        + " SELECT $1, $2, 'BOOKED', $3 FROM u, t WHERE u.ok AND t.ok"
        + " ON CONFLICT DO NOTHING RETURNING 1)"
        + " SELECT u.ok, t.ok, (SELECT count(*) FROM ins) FROM u, t");
    static final A2bSql BOOKINGS = withParent("SELECT 1 FROM a2b.users WHERE id = $1",
                                              BOOKING_SELECT + " WHERE ut.user_id = $1", "7");
    static final A2bSql BOOKING = new A2bSql(BOOKING_SELECT + " WHERE ut.user_id = $1 AND ut.transfer_id = $2");
    static final A2bSql UPDATE_BOOKING = new A2bSql(
        "UPDATE a2b.users_transfers SET state = $3, description = $4 WHERE user_id = $1 AND transfer_id = $2");
    static final A2bSql USER = new A2bSql("SELECT id, first_name, last_name, email, phone FROM a2b.users WHERE id = $1");
    static final A2bSql UPDATE_USER = new A2bSql("UPDATE a2b.users SET first_name = $2, last_name = $3 WHERE id = $1");
    static final A2bSql READY = new A2bSql("SELECT 1");
}
