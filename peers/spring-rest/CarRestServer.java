// CarRestServer.java - the Car service's REST side (POST /v1/create, GET
// /healthz) as a Spring 4 MVC @RestController, on DispatcherServlet in an
// embedded Jetty 9 with Jackson for JSON: the article's REST framework (there
// Spring Boot, which Debian does not have), as a contender the benchmarks
// race `shootout car-server` against. Not part of the product: see README.md.
//
// The answers are car-server's (docs/car_server.md): 201 {"status":"created"}
// for a whole document, 400 {"error":..., "field":...} for a bad one, and
// 404, 405 and 415 with car-server's {"error":...} bodies.

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpOutputMessage;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.http.converter.json.MappingJackson2HttpMessageConverter;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

public final class CarRestServer {
    private static final long U32_MAX = 4294967295L;
    private static final long STOP_TIMEOUT_MS = 2000;

    // The article's document: Jackson binds it into these, fields by name.
    public static final class Car {
        public String make, model, trim, color;
        public Long year, mileage;
    }

    public static final class Driver {
        public String firstname, lastname, driverId;
    }

    public static final class Message {
        public Car car;
        public Driver driver;
    }

    // A document Jackson could bind but car-server refuses: a field missing,
    // or a number outside uint32.
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String error, field;

        Refused(String error, String field) {
            super(error, null, false, false);
            this.error = error;
            this.field = field;
        }
    }

    static Map<String, String> body(String... keyValues) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2)
            m.put(keyValues[i], keyValues[i + 1]);
        return m;
    }

    static void need(Object value, String field) {
        if (value == null)
            throw new Refused("missing field", field);
    }

    static void needU32(Long value, String field) {
        need(value, field);
        if (value < 0 || value > U32_MAX)
            throw new Refused("not an integer in 0..4294967295", field);
    }

    @RestController
    public static class CarController {
        private static final Map<String, String> CREATED = body("status", "created");
        private static final Map<String, String> OK = body("status", "ok");

        @PostMapping(path = "/v1/create", consumes = MediaType.APPLICATION_JSON_VALUE)
        public ResponseEntity<Map<String, String>> create(@RequestBody Message m) {
            need(m.car, "car");
            need(m.car.make, "car.make");
            need(m.car.model, "car.model");
            need(m.car.trim, "car.trim");
            need(m.car.color, "car.color");
            needU32(m.car.year, "car.year");
            needU32(m.car.mileage, "car.mileage");
            need(m.driver, "driver");
            need(m.driver.firstname, "driver.firstname");
            need(m.driver.lastname, "driver.lastname");
            need(m.driver.driverId, "driver.driverId");
            return ResponseEntity.status(HttpStatus.CREATED).body(CREATED);
        }

        @GetMapping("/healthz")
        public Map<String, String> health() {
            return OK;
        }
    }

    // Every error answer, the ones found before any controller method is
    // chosen (404, 405, 415) included.
    @ControllerAdvice
    public static class Errors {
        @ExceptionHandler(Refused.class)
        public ResponseEntity<Map<String, String>> refused(Refused e) {
            return ResponseEntity.badRequest().body(body("error", e.error, "field", e.field));
        }

        // Jackson's reasons, in car-server's words (car_json.c).
        @ExceptionHandler(HttpMessageNotReadableException.class)
        public ResponseEntity<Map<String, String>> unreadable(HttpMessageNotReadableException e) {
            // Jackson wraps what its parser found in the binder's exception,
            // which knows the field.
            Throwable c = e.getCause(), why = c;
            while (why != null && why.getCause() instanceof JsonProcessingException)
                why = why.getCause();
            String error;
            if (why == null || why instanceof JsonEOFException)
                error = "unexpected end of input";
            else if (why instanceof JsonParseException && why.getMessage().startsWith("Duplicate field"))
                error = "duplicate field";
            else if (why instanceof InputCoercionException)
                error = "not an integer in 0..4294967295";
            else if (why instanceof JsonParseException)
                error = "malformed JSON";
            else
                error = "wrong type";
            String field = c instanceof JsonMappingException ? path((JsonMappingException) c) : "";
            return ResponseEntity.badRequest().body(field.isEmpty() ? body("error", error)
                                                                   : body("error", error, "field", field));
        }

        @ExceptionHandler(NoHandlerFoundException.class)
        public ResponseEntity<Map<String, String>> notFound() {
            return ResponseEntity.status(HttpStatus.NOT_FOUND).body(body("error", "not found"));
        }

        @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
        public ResponseEntity<Map<String, String>> method(HttpRequestMethodNotSupportedException e) {
            return ResponseEntity.status(HttpStatus.METHOD_NOT_ALLOWED)
                .allow(e.getSupportedHttpMethods().toArray(new org.springframework.http.HttpMethod[0]))
                .body(body("error", "method not allowed"));
        }

        @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
        public ResponseEntity<Map<String, String>> mediaType() {
            return ResponseEntity.status(HttpStatus.UNSUPPORTED_MEDIA_TYPE)
                .body(body("error", "content type must be application/json"));
        }

        private static String path(JsonMappingException e) {
            StringJoiner j = new StringJoiner(".");
            for (JsonMappingException.Reference r : e.getPath())
                if (r.getFieldName() != null)
                    j.add(r.getFieldName());
            return j.toString();
        }
    }

    // Strict where car-server is: no numbers or booleans for strings, no
    // strings or fractions for numbers, duplicates refused; unknown fields
    // ignored.
    static ObjectMapper mapper() {
        ObjectMapper m = JsonMapper.builder()
                             .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                             .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                             .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                             .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
                             .build();
        for (CoercionInputShape shape :
             new CoercionInputShape[] {CoercionInputShape.Integer, CoercionInputShape.Float, CoercionInputShape.Boolean})
            m.coercionConfigFor(LogicalType.Textual).setCoercion(shape, CoercionAction.Fail);
        return m;
    }

    // The beans of this controller, on SpringJetty's (peers/lib).
    public static class WebConfig extends SpringJetty.MvcConfig {
        private final List<HttpMessageConverter<?>> converters = List.of(json());

        @Override
        protected List<HttpMessageConverter<?>> converters() {
            return converters;
        }

        private static HttpMessageConverter<?> json() {
            MappingJackson2HttpMessageConverter json = new MappingJackson2HttpMessageConverter(mapper()) {
                // Serialized whole, so that the answer has a Content-Length
                // as car-server's do (Jackson's streaming would be chunked).
                @Override
                protected void writeInternal(Object body, Type type, HttpOutputMessage out) throws IOException {
                    byte[] bytes = getObjectMapper().writeValueAsBytes(body);
                    out.getHeaders().setContentLength(bytes.length);
                    out.getBody().write(bytes);
                }
            };
            // car-server says "application/json", without a charset parameter.
            json.setSupportedMediaTypes(List.of(MediaType.APPLICATION_JSON));
            json.setDefaultCharset(null);
            return json;
        }

        @Bean
        public CarController carController() {
            return new CarController();
        }

        @Bean
        public Errors errors() {
            return new Errors();
        }

        @Bean
        public RequestMappingHandlerMapping handlerMapping() {
            return new RequestMappingHandlerMapping();
        }
    }

    private static void usage() {
        System.err.println("usage: CarRestServer [--port N] [--bind ADDR]\n"
                           + "  --port N     TCP port, 0 (default) picks a free one\n"
                           + "  --bind ADDR  address to listen on (default 127.0.0.1)");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        int port = 0;
        String bind = "127.0.0.1";
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length)
                usage();
            if (args[i].equals("--port"))
                port = parsePort(args[i + 1]);
            else if (args[i].equals("--bind"))
                bind = args[i + 1];
            else
                usage();
        }

        SpringJetty.serve("spring-rest", WebConfig.class, bind, port, STOP_TIMEOUT_MS, http -> {}, h -> h);
    }

    private static int parsePort(String value) {
        try {
            int v = Integer.parseInt(value);
            if (v >= 0 && v <= 65535)
                return v;
        } catch (NumberFormatException e) {
            // reported below
        }
        System.err.println("spring-rest: bad value for --port: '" + value + "'");
        System.exit(2);
        return 0;
    }
}
