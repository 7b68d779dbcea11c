// SpringJetty.java - what the Spring MVC contenders (peers/spring-rest,
// peers/a2b-spring) share, compiled into each by `make peers`: the MVC
// beans they need of what @EnableWebMvc imports, and Spring's
// DispatcherServlet in an embedded Jetty 9 that stops on SIGTERM.

import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.springframework.context.annotation.Bean;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.web.context.support.AnnotationConfigWebApplicationContext;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.mvc.method.annotation.ExceptionHandlerExceptionResolver;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;

final class SpringJetty {
    private SpringJetty() {}

    // The beans a contender's configuration adds to its controllers, as a
    // "lite" configuration (no @Configuration): Spring 4.3 would subclass a
    // full one with its CGLIB, whose ASM throws on JDK 17's class files. A
    // subclass says which converters read and write the bodies and adds its
    // controllers and a RequestMappingHandlerMapping.
    public abstract static class MvcConfig {
        protected abstract List<HttpMessageConverter<?>> converters();

        @Bean
        public RequestMappingHandlerAdapter handlerAdapter() {
            RequestMappingHandlerAdapter a = new RequestMappingHandlerAdapter();
            a.setMessageConverters(converters());
            return a;
        }

        @Bean
        public ExceptionHandlerExceptionResolver exceptionResolver() {
            ExceptionHandlerExceptionResolver r = new ExceptionHandlerExceptionResolver();
            r.setMessageConverters(converters());
            return r;
        }
    }

    // Serves config's controllers on bind:port until SIGTERM or SIGINT, on
    // which Jetty's shutdown hook stops it, letting requests in progress
    // finish for up to stopTimeoutMs. Jetty's defaults otherwise (thread
    // pool, selectors, acceptors), as a Spring Boot application on Jetty
    // gets them. http sets the connector up, wrap may put handlers around
    // the servlet's. Prints "<name> listening on ADDR:PORT" on stderr once
    // it listens; exits 1 if it cannot.
    static void serve(String name, Class<?> config, String bind, int port, long stopTimeoutMs,
                      Consumer<ServerConnector> http, UnaryOperator<Handler> wrap) throws Exception {
        AnnotationConfigWebApplicationContext spring = new AnnotationConfigWebApplicationContext();
        spring.register(config);
        DispatcherServlet dispatcher = new DispatcherServlet(spring);
        dispatcher.setThrowExceptionIfNoHandlerFound(true);  // 404s through the controllers' advice

        Server jetty = new Server();
        HttpConfiguration httpConfig = new HttpConfiguration();
        httpConfig.setSendDateHeader(true);  // as our servers (and Spring Boot's Jetty) do
        ServerConnector connector = new ServerConnector(jetty, new HttpConnectionFactory(httpConfig));
        connector.setHost(bind);
        connector.setPort(port);
        http.accept(connector);
        jetty.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        ServletHolder holder = new ServletHolder(dispatcher);
        holder.setInitOrder(1);  // Spring starts with Jetty, not on the first request
        context.addServlet(holder, "/");
        jetty.setHandler(wrap.apply(context));
        jetty.setStopAtShutdown(true);
        jetty.setStopTimeout(stopTimeoutMs);
        try {
            jetty.start();
        } catch (Exception e) {
            System.err.println(name + ": cannot listen on " + bind + ":" + port + ": " + e.getMessage());
            System.exit(1);
        }
        System.err.println(name + " listening on " + bind + ":" + connector.getLocalPort());
        jetty.join();
    }
}
