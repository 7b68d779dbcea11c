// CarGrpcServer.java - the Car service (com.stevenpg.rvg.MessageService/send,
// and grpc.health.v1.Health/Check) on grpc-java with its Netty transport, the
// article's own gRPC stack, as a contender the benchmarks race our C server
// against. Not part of the product: see README.md.
//
// It answers as peers/grpc-cpp does: every Message gets
// Result{status: "successful"}; Check is SERVING for "" and the Car service,
// NOT_FOUND for any other name. The handlers never block, so they run on
// Netty's event-loop threads (directExecutor), and --threads sizes that loop.

import com.stevenpg.rvg.CarOuterClass.Message;
import com.stevenpg.rvg.CarOuterClass.Result;
import com.stevenpg.rvg.MessageServiceGrpc;
import grpc.health.v1.HealthGrpc;
import grpc.health.v1.HealthOuterClass.HealthCheckRequest;
import grpc.health.v1.HealthOuterClass.HealthCheckResponse;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class CarGrpcServer {
    private static final int MAX_THREADS = 256;
    // How long in-flight calls get to finish on SIGTERM before being cancelled.
    private static final long SHUTDOWN_GRACE_MS = 2000;

    private static final Result SUCCESSFUL = Result.newBuilder().setStatus("successful").build();
    private static final HealthCheckResponse SERVING =
        HealthCheckResponse.newBuilder().setStatus(HealthCheckResponse.ServingStatus.SERVING).build();

    static final class Car extends MessageServiceGrpc.MessageServiceImplBase {
        @Override
        public void send(Message request, StreamObserver<Result> reply) {
            reply.onNext(SUCCESSFUL);
            reply.onCompleted();
        }
    }

    static final class Health extends HealthGrpc.HealthImplBase {
        @Override
        public void check(HealthCheckRequest request, StreamObserver<HealthCheckResponse> reply) {
            String name = request.getService();
            if (!name.isEmpty() && !name.equals(MessageServiceGrpc.SERVICE_NAME)) {
                reply.onError(Status.NOT_FOUND.withDescription("unknown service").asRuntimeException());
                return;
            }
            reply.onNext(SERVING);
            reply.onCompleted();
        }
    }

    private static void usage() {
        System.err.println("usage: CarGrpcServer [--port N] [--bind ADDR] [--threads T]\n"
                           + "  --port N     TCP port, 0 (default) picks a free one\n"
                           + "  --bind ADDR  address to listen on (default 127.0.0.1)\n"
                           + "  --threads T  Netty event-loop threads that poll and serve (default 1)");
    }

    private static int parse(String name, String value, int lo, int hi) {
        try {
            int v = Integer.parseInt(value);
            if (v >= lo && v <= hi)
                return v;
        } catch (NumberFormatException e) {
            // reported below
        }
        System.err.println("grpc-java: bad value for " + name + ": '" + value + "'");
        System.exit(2);
        return 0;
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        int port = 0;
        int threads = 1;  // as shootout car-server's --threads
        String bind = "127.0.0.1";
        for (int i = 0; i < args.length; i++) {
            if (i + 1 >= args.length) {
                usage();
                System.exit(2);
            }
            String value = args[++i];
            switch (args[i - 1]) {
            case "--port": port = parse("--port", value, 0, 65535); break;
            case "--threads": threads = parse("--threads", value, 1, MAX_THREADS); break;
            case "--bind": bind = value; break;
            default:
                usage();
                System.exit(2);
            }
        }

        // One acceptor thread; the workers run the transport and, with
        // directExecutor, the handlers too (grpc-java's ServerBuilder
        // documentation: no executor hop for handlers that never block).
        NioEventLoopGroup boss = new NioEventLoopGroup(1);
        NioEventLoopGroup workers = new NioEventLoopGroup(threads);
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress(bind, port))
                            .channelType(NioServerSocketChannel.class)
                            .bossEventLoopGroup(boss)
                            .workerEventLoopGroup(workers)
                            .directExecutor()
                            .addService(new Car())
                            .addService(new Health())
                            .build();
        try {
            server.start();
        } catch (IOException e) {
            Throwable why = e.getCause() != null ? e.getCause() : e;
            System.err.println("grpc-java: cannot listen on " + bind + ":" + port + ": " + why);
            System.exit(1);
        }
        InetSocketAddress bound = (InetSocketAddress) server.getListenSockets().get(0);
        System.err.println("grpc-java listening on " + bind + ":" + bound.getPort());

        // SIGTERM/SIGINT run this hook; the JVM exits once it returns.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdown();
            try {
                if (!server.awaitTermination(SHUTDOWN_GRACE_MS, TimeUnit.MILLISECONDS))
                    server.shutdownNow().awaitTermination(SHUTDOWN_GRACE_MS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            workers.shutdownGracefully(0, SHUTDOWN_GRACE_MS, TimeUnit.MILLISECONDS);
            boss.shutdownGracefully(0, SHUTDOWN_GRACE_MS, TimeUnit.MILLISECONDS);
        }));
        server.awaitTermination();
    }
}
