// A2bSpringServer.java - the a2b service of docs/a2b.md on Spring 4 MVC
// (@RestController on DispatcherServlet in an embedded Jetty 9) with
// Spring's JdbcTemplate over a commons-dbcp2 pool and PostgreSQL's JDBC
// driver: the servlet/JDBC stack of the Gatling article's Spring service
// (there Spring Boot on WebFlux and R2DBC, which Debian does not have), as a
// contender the benchmarks race `shootout a2b-server --db` against. A port
// of peers/a2b-node: the same routes, statuses, JSON bytes (A2bJson) and
// statements (A2bSql) on the database a2b-server --init fills; it creates
// no schema. Not part of the product: see README.md.

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.servlet.http.HttpServletRequest;
import javax.sql.DataSource;
import org.apache.commons.dbcp2.BasicDataSource;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.springframework.context.annotation.Bean;
import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.ByteArrayHttpMessageConverter;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.PreparedStatementSetter;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import org.springframework.web.util.UrlPathHelper;

public final class A2bSpringServer {
    private static final long STOP_TIMEOUT_MS = 5000;
    private static final long POOL_WAIT_MS = 5000;  // as a2b-node's connectionTimeoutMillis
    private static final long IDLE_TIMEOUT_MS = 60000;  // a2b-server's --idle-timeout
    private static final MediaType JSON = MediaType.APPLICATION_JSON;

    // An answer already decided (an error, or a body the route refused).
    static final class Answer extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient ResponseEntity<byte[]> entity;

        Answer(ResponseEntity<byte[]> entity) {
            super(null, null, false, false);
            this.entity = entity;
        }
    }

    static ResponseEntity<byte[]> send(int status, String body) {
        return ResponseEntity.status(status).contentType(JSON).body(body.getBytes(StandardCharsets.UTF_8));
    }

    static ResponseEntity<byte[]> fail(int status, String message) {
        return send(status, A2bJson.error(status, message));
    }

    static Answer refuse(int status, String message) {
        return new Answer(fail(status, message));
    }

    static ResponseEntity<byte[]> empty(HttpStatus status) {
        return ResponseEntity.status(status).build();
    }

    // Path ids: anything but 1-18 digits is a 400.
    static void ids(String... values) {
        for (String v : values)
            if (!A2bBody.isId(v))
                throw refuse(400, "Invalid id '" + (v.length() > 40 ? v.substring(0, 40) : v) + "': an id is a number");
    }

    static boolean isJsonType(String ct) {
        int semi = ct.indexOf(';');
        return (semi >= 0 ? ct.substring(0, semi) : ct).trim().equalsIgnoreCase("application/json");
    }

    // The wanted fields of a POST or PUT body, after the checks that answer
    // 415 and 400.
    static Map<String, String> readBody(String contentType, byte[] body, String... names) {
        if (contentType != null && !isJsonType(contentType))
            throw refuse(415, "The body must be application/json");
        if (body == null || body.length == 0)
            throw refuse(400, "Required request body is missing");
        try {
            return A2bBody.parse(body, names);
        } catch (A2bBody.BodyError e) {
            throw refuse(400, "Malformed JSON body: " + e.getMessage());
        }
    }

    static boolean nameOk(String s) {
        return s != null && !s.isEmpty() && s.getBytes(StandardCharsets.UTF_8).length <= 50;
    }

    static final Set<String> STATES = Set.of("BOOKED", "COMPLETED", "CANCELED");

    @RestController
    @RequestMapping("/api/v1")
    public static class A2bController {
        private final JdbcTemplate jdbc;

        public A2bController(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        // Ids bound as int8, strings as text, as a2b_pg.c prepares them.
        private static PreparedStatementSetter args(A2bSql sql, Object... values) {
            return ps -> bind(ps, sql, values);
        }

        private static void bind(PreparedStatement ps, A2bSql sql, Object[] values) throws SQLException {
            for (int i = 0; i < sql.params.length; i++) {
                Object v = values[sql.params[i]];
                if (v instanceof Long)
                    ps.setLong(i + 1, (Long) v);
                else
                    ps.setString(i + 1, (String) v);
            }
        }

        private static Long id(String s) {
            return Long.valueOf(s);
        }

        // A list whose parent may be missing: column 1 says whether it exists.
        private ResponseEntity<byte[]> listWithParent(A2bSql sql, String notFound, A2bJson.Reader row,
                                                      Object... values) {
            return jdbc.query(sql.text, args(sql, values), (ResultSet r) -> {
                r.next();
                if (!r.getBoolean(1))
                    return fail(404, notFound);
                r.getObject(2);
                return send(200, r.wasNull() ? "[]" : A2bJson.list(r, row, 2));
            });
        }

        private ResponseEntity<byte[]> list(A2bSql sql, A2bJson.Reader row, Object... values) {
            return jdbc.query(sql.text, args(sql, values),
                              (ResultSet r) -> send(200, r.next() ? A2bJson.list(r, row, 1) : "[]"));
        }

        private ResponseEntity<byte[]> one(A2bSql sql, String notFound, A2bJson.Reader row, Object... values) {
            return jdbc.query(sql.text, args(sql, values),
                              (ResultSet r) -> r.next() ? send(200, A2bJson.one(r, row, 1)) : fail(404, notFound));
        }

        @GetMapping("/countries")
        public ResponseEntity<byte[]> countries() {
            return list(A2bSql.COUNTRIES, A2bJson::country);
        }

        @GetMapping("/countries/{countryId}/cities")
        public ResponseEntity<byte[]> cities(@PathVariable("countryId") String countryId) {
            ids(countryId);
            return listWithParent(A2bSql.CITIES, "Country not found", A2bJson::city, id(countryId));
        }

        @GetMapping("/countries/{countryId}/cities/{cityId}/locations")
        public ResponseEntity<byte[]> locations(@PathVariable("countryId") String countryId,
                                                @PathVariable("cityId") String cityId) {
            ids(countryId, cityId);
            return listWithParent(A2bSql.LOCATIONS, "City not found in the country", A2bJson::location,
                                  id(countryId), id(cityId));
        }

        @GetMapping("/transfers")
        public ResponseEntity<byte[]> transfers(HttpServletRequest req) {
            String qs = req.getQueryString();
            String o = A2bBody.queryGet(qs, "originId", 32);
            String d = A2bBody.queryGet(qs, "destinationId", 32);
            String t = A2bBody.queryGet(qs, "date", 32);
            if (o == A2bBody.MALFORMED || d == A2bBody.MALFORMED || t == A2bBody.MALFORMED)
                return fail(400, "Malformed query string");
            if (o == null || d == null)
                return fail(400, "Required parameter '" + (o == null ? "originId" : "destinationId")
                                     + "' is not present");
            if (!A2bBody.isId(o) || !A2bBody.isId(d))
                return fail(400, "originId and destinationId must be numbers");
            if (t == null || !A2bBody.isDay(t))
                return fail(400, "The date should be YYYY-MM-DD");
            return list(A2bSql.TRANSFERS, A2bJson::transfer, id(o), id(d), t);
        }

        @GetMapping("/users/{userId}")
        public ResponseEntity<byte[]> user(@PathVariable("userId") String userId) {
            ids(userId);
            return one(A2bSql.USER, "User not found", A2bJson::user, id(userId));
        }

        @PutMapping("/users/{userId}")
        public ResponseEntity<byte[]> updateUser(@PathVariable("userId") String userId,
                                                 @RequestHeader(name = HttpHeaders.CONTENT_TYPE, required = false) String ct,
                                                 @RequestBody(required = false) byte[] body) {
            ids(userId);
            Map<String, String> b = readBody(ct, body, "firstName", "lastName");
            if (!nameOk(b.get("firstName")) || !nameOk(b.get("lastName")))
                return fail(400, "The first and last names should have 1 to 50 bytes");
            int n = jdbc.update(A2bSql.UPDATE_USER.text,
                                args(A2bSql.UPDATE_USER, id(userId), b.get("firstName"), b.get("lastName")));
            return n == 0 ? fail(404, "User not found") : empty(HttpStatus.NO_CONTENT);
        }

        @GetMapping("/users/{userId}/transfers")
        public ResponseEntity<byte[]> bookings(@PathVariable("userId") String userId) {
            ids(userId);
            return listWithParent(A2bSql.BOOKINGS, "User not found", A2bJson::booking, id(userId));
        }

        @GetMapping("/users/{userId}/transfers/{transferId}")
        public ResponseEntity<byte[]> booking(@PathVariable("userId") String userId,
                                              @PathVariable("transferId") String transferId) {
            ids(userId, transferId);
            return one(A2bSql.BOOKING, "User's transfer not found", A2bJson::booking, id(userId), id(transferId));
        }

        @PostMapping("/users/{userId}/transfers/{transferId}")
        public ResponseEntity<byte[]> book(@PathVariable("userId") String userId,
                                           @PathVariable("transferId") String transferId,
                                           @RequestHeader(name = HttpHeaders.CONTENT_TYPE, required = false) String ct,
                                           @RequestBody(required = false) byte[] body) {
            ids(userId, transferId);
            String description = readBody(ct, body, "description").get("description");
            if (description == null)
                return fail(400, "The description should not be null");
            return jdbc.query(A2bSql.BOOK.text, args(A2bSql.BOOK, id(userId), id(transferId), description),
                              (ResultSet r) -> {
                                  r.next();
                                  if (!r.getBoolean(1))
                                      return fail(404, "User not found");
                                  if (!r.getBoolean(2))
                                      return fail(404, "Transfer not found");
                                  if (r.getLong(3) != 1)
                                      return fail(409, "The transfer is already booked by the user");
                                  return empty(HttpStatus.CREATED);
                              });
        }

        @PutMapping("/users/{userId}/transfers/{transferId}")
        public ResponseEntity<byte[]> updateBooking(@PathVariable("userId") String userId,
                                                    @PathVariable("transferId") String transferId,
                                                    @RequestHeader(name = HttpHeaders.CONTENT_TYPE, required = false) String ct,
                                                    @RequestBody(required = false) byte[] body) {
            ids(userId, transferId);
            Map<String, String> b = readBody(ct, body, "description", "state");
            if (b.get("state") == null || !STATES.contains(b.get("state")))
                return fail(400, "The state should be BOOKED, COMPLETED or CANCELED");
            if (b.get("description") == null)
                return fail(400, "The description should not be null");
            int n = jdbc.update(A2bSql.UPDATE_BOOKING.text, args(A2bSql.UPDATE_BOOKING, id(userId), id(transferId),
                                                                 b.get("state"), b.get("description")));
            return n == 0 ? fail(404, "User's transfer not found") : empty(HttpStatus.NO_CONTENT);
        }
    }

    @RestController
    @RequestMapping("/actuator/health")
    public static class HealthController {
        private static final String UP = "{\"status\":\"UP\"}";
        private final JdbcTemplate jdbc;

        public HealthController(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @GetMapping("/liveness")
        public ResponseEntity<byte[]> liveness() {
            return send(200, UP);
        }

        @GetMapping("/readiness")
        public ResponseEntity<byte[]> readiness() {
            try {
                jdbc.queryForObject(A2bSql.READY.text, Integer.class);
                return send(200, UP);
            } catch (DataAccessException e) {
                return send(503, "{\"status\":\"DOWN\"}");
            }
        }
    }

    // Every error answer, the ones found before a controller method is
    // chosen (404, 405) included.
    @ControllerAdvice
    public static class Errors {
        @ExceptionHandler(Answer.class)
        public ResponseEntity<byte[]> answer(Answer a) {
            return a.entity;
        }

        @ExceptionHandler(NoHandlerFoundException.class)
        public ResponseEntity<byte[]> notFound() {
            return fail(404, "No such resource");
        }

        // Allow as a2b-server writes it: sorted, HEAD with GET.
        @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
        public ResponseEntity<byte[]> method(HttpRequestMethodNotSupportedException e) {
            Set<String> allow = new TreeSet<>();
            for (String m : e.getSupportedMethods()) {
                allow.add(m);
                if (m.equals("GET"))
                    allow.add("HEAD");
            }
            return ResponseEntity.status(405).header(HttpHeaders.ALLOW, String.join(", ", allow)).contentType(JSON)
                .body(A2bJson.error(405, "Method not allowed").getBytes(StandardCharsets.UTF_8));
        }

        // A server-side SQL error is a 500; a connection that could not be
        // had or was lost is a 503, as a2b_pg.c answers for its lost ones.
        @ExceptionHandler(DataAccessException.class)
        public ResponseEntity<byte[]> database(DataAccessException e) {
            SQLException sql = null;
            for (Throwable c = e; c != null && sql == null; c = c.getCause())
                if (c instanceof SQLException)
                    sql = (SQLException) c;
            String state = sql == null ? null : sql.getSQLState();
            if (state == null || state.startsWith("08") || state.startsWith("57P"))
                return fail(503, "The database connection was lost");
            System.err.println("a2b-spring: " + e.getMostSpecificCause().getMessage());
            return fail(500, "Database error");
        }

        @ExceptionHandler(Exception.class)
        public ResponseEntity<byte[]> other(Exception e) {
            System.err.println("a2b-spring: " + e);
            return fail(500, "Internal error");
        }
    }

    // The request's path as it came, undecoded, as a2b-server routes it;
    // one with an empty segment is no route (404), where Spring's matcher
    // would skip the empty segment.
    static final class RawPath extends UrlPathHelper {
        RawPath() {
            setUrlDecode(false);
            setRemoveSemicolonContent(false);
        }

        @Override
        public String getLookupPathForRequest(HttpServletRequest request) {
            String path = request.getRequestURI();
            return path.contains("//") ? "" : path;
        }
    }

    // The beans of the controllers, on SpringJetty's (peers/lib). Bodies
    // are bytes both ways: A2bBody and A2bJson do the JSON.
    public static class WebConfig extends SpringJetty.MvcConfig {
        static DataSource dataSource;  // set by main before the context starts

        private final List<HttpMessageConverter<?>> converters = List.of(new ByteArrayHttpMessageConverter());

        @Override
        protected List<HttpMessageConverter<?>> converters() {
            return converters;
        }

        @Bean
        public JdbcTemplate jdbcTemplate() {
            return new JdbcTemplate(dataSource);
        }

        @Bean
        public A2bController a2bController() {
            return new A2bController(jdbcTemplate());
        }

        @Bean
        public HealthController healthController() {
            return new HealthController(jdbcTemplate());
        }

        @Bean
        public Errors errors() {
            return new Errors();
        }

        @Bean
        public RequestMappingHandlerMapping handlerMapping() {
            RequestMappingHandlerMapping m = new RequestMappingHandlerMapping();
            // Exact paths: no /users/1.json, no trailing slash, as a2b-server.
            m.setUseSuffixPatternMatch(false);
            m.setUseTrailingSlashMatch(false);
            m.setUrlPathHelper(new RawPath());
            return m;
        }


    }

    // postgres[ql]://[user[:password]@][host][:port][/db][?k=v...] as libpq
    // reads it, for pgjdbc: jdbc:postgresql://host:port/db?user=...&k=v.
    static String jdbcUrl(String uri) {
        URI u;
        try {
            u = new URI(uri);
        } catch (URISyntaxException e) {
            return null;
        }
        if (!"postgres".equals(u.getScheme()) && !"postgresql".equals(u.getScheme()))
            return null;
        StringBuilder s = new StringBuilder("jdbc:postgresql://");
        s.append(u.getHost() == null ? "localhost" : u.getHost());
        if (u.getPort() >= 0)
            s.append(':').append(u.getPort());
        s.append(u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath());
        List<String> params = new ArrayList<>();
        if (u.getUserInfo() != null) {
            String[] up = u.getUserInfo().split(":", 2);
            params.add("user=" + URLEncoder.encode(up[0], StandardCharsets.UTF_8));
            if (up.length == 2)
                params.add("password=" + URLEncoder.encode(up[1], StandardCharsets.UTF_8));
        }
        if (u.getRawQuery() != null)
            params.add(u.getRawQuery());
        if (!params.isEmpty())
            s.append('?').append(String.join("&", params));
        return s.toString();
    }

    private static final String USAGE =
        "usage: A2bSpringServer --db postgres://... [--port N] [--bind ADDR] [--pool N]\n"
        + "  --db URI     PostgreSQL with schema a2b (filled by shootout a2b-server --db URI --init)\n"
        + "  --port N     TCP port, default 8080; 0 = a free one\n"
        + "  --bind ADDR  default 127.0.0.1\n"
        + "  --pool N     PostgreSQL connections, default 4";

    private static void die(String message) {
        System.err.println("a2b-spring: " + message + "\n" + USAGE);
        System.exit(2);
    }

    private static int number(String name, String value, int min, int max) {
        try {
            int v = Integer.parseInt(value);
            if (v >= min && v <= max)
                return v;
        } catch (NumberFormatException e) {
            // reported below
        }
        die("bad value for " + name + ": '" + value + "'");
        return 0;
    }

    public static void main(String[] args) throws Exception {
        int port = 8080, pool = 4;
        String bind = "127.0.0.1", db = null;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length)
                die(args[i] + " needs a value");
            switch (args[i]) {
            case "--port": port = number("--port", args[i + 1], 0, 65535); break;
            case "--pool": pool = number("--pool", args[i + 1], 1, 9999); break;
            case "--bind": bind = args[i + 1]; break;
            case "--db": db = args[i + 1]; break;
            default: die("unknown option " + args[i]);
            }
        }
        String url = db == null ? null : jdbcUrl(db);
        if (url == null)
            die("--db must be a postgres:// URI");

        // A fixed pool of --pool connections, all opened before serving (as
        // a2b_pg.c does): a database that cannot be reached is a failed
        // start. No test on borrow (a round trip per request): a connection
        // that broke is closed by the driver and dropped when returned.
        BasicDataSource ds = new BasicDataSource();
        ds.setDriverClassName("org.postgresql.Driver");
        ds.setUrl(url);
        ds.setInitialSize(pool);
        ds.setMaxTotal(pool);
        ds.setMaxIdle(pool);
        ds.setMinIdle(pool);
        ds.setMaxWaitMillis(POOL_WAIT_MS);
        ds.setTestOnBorrow(false);
        try {
            ds.getConnection().close();
        } catch (SQLException e) {
            System.err.println("a2b-spring: cannot connect to PostgreSQL: " + e.getMessage());
            System.exit(1);
        }
        WebConfig.dataSource = ds;

        SpringJetty.serve("a2b-spring", WebConfig.class, bind, port, STOP_TIMEOUT_MS, http -> {
            http.setIdleTimeout(IDLE_TIMEOUT_MS);
            // a2b-node sends no Server header either
            http.getConnectionFactory(HttpConnectionFactory.class).getHttpConfiguration().setSendServerVersion(false);
        }, servlet -> {
            // gzip as a2b-server: level 1, bodies over 1 KiB, GET only.
            GzipHandler gzip = new GzipHandler();
            gzip.setMinGzipSize(1025);
            gzip.setCompressionLevel(1);
            gzip.setIncludedMethods(HttpMethod.GET.name());
            gzip.setExcludedAgentPatterns();  // no "Vary: User-Agent" for old MSIE
            gzip.setHandler(servlet);
            return gzip;
        });
    }
}
