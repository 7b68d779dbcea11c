// car_grpc_cpp_server.cc - the Car service (com.stevenpg.rvg.MessageService/
// send, and grpc.health.v1.Health/Check) on the official gRPC C++ library,
// as the peer the benchmarks race our C server against. Not part of the
// product: see README.md.
//
// It uses the asynchronous completion-queue API: one completion queue per
// --threads, each drained by its own thread, and those threads are the only
// ones that poll the sockets and run the handlers. Health is served on the
// same queues rather than by grpc++'s default health service, because that
// one is written on the callback API and would start grpc++'s own pool of
// callback threads, which also poll the sockets and could not be bounded.

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "car.grpc.pb.h"
#include "health.grpc.pb.h"

namespace {

using com::stevenpg::rvg::Message;
using com::stevenpg::rvg::MessageService;
using com::stevenpg::rvg::Result;
using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

constexpr int kMaxReceiveMessageSize = 4 * 1024 * 1024;  // grpc's default
constexpr int kMaxThreads = 256;
// How long in-flight calls get to finish on SIGTERM before being cancelled.
constexpr auto kShutdownGrace = std::chrono::seconds(2);

// Every completion-queue tag is a server call, moved on by each event.
class Tag {
  public:
    virtual ~Tag() = default;
    virtual void Proceed(bool ok) = 0;
};

// One unary call of any method: asks the server for the next call of that
// method, answers it with the method's handler, and on the first event
// also puts a fresh request in its place so that the method stays served.
template <class Service, class Request, class Reply>
class UnaryCall final : public Tag {
  public:
    using RequestFn = void (Service::*)(grpc::ServerContext *, Request *,
                                        grpc::ServerAsyncResponseWriter<Reply> *,
                                        grpc::CompletionQueue *, grpc::ServerCompletionQueue *, void *);
    using HandleFn = grpc::Status (*)(const Request &, Reply *);

    UnaryCall(Service *service, grpc::ServerCompletionQueue *cq, RequestFn request, HandleFn handle)
        : service_(service), cq_(cq), request_(request), handle_(handle) {
        (service_->*request_)(&ctx_, &req_, &writer_, cq_, cq_, this);
    }

    void Proceed(bool ok) override {
        // ok is false for a request cancelled by shutdown; the end of a
        // finished call needs nothing more either way.
        if (answered_ || !ok) {
            delete this;
            return;
        }
        new UnaryCall(service_, cq_, request_, handle_);
        answered_ = true;
        grpc::Status status = handle_(req_, &reply_);
        if (status.ok())
            writer_.Finish(reply_, status, this);
        else
            writer_.FinishWithError(status, this);
    }

  private:
    Service *service_;
    grpc::ServerCompletionQueue *cq_;
    RequestFn request_;
    HandleFn handle_;
    grpc::ServerContext ctx_;
    Request req_;
    Reply reply_;
    grpc::ServerAsyncResponseWriter<Reply> writer_{&ctx_};
    bool answered_ = false;
};

// The article's server answers every record with this status.
grpc::Status HandleSend(const Message &, Result *reply) {
    reply->set_status("successful");
    return grpc::Status::OK;
}

// The health-checking protocol: "" is the whole server, a known service
// name is that service, anything else is NOT_FOUND.
grpc::Status HandleCheck(const HealthCheckRequest &req, HealthCheckResponse *reply) {
    if (!req.service().empty() && req.service() != MessageService::service_full_name())
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
    reply->set_status(HealthCheckResponse::SERVING);
    return grpc::Status::OK;
}

void Usage(FILE *out) {
    fprintf(out,
            "usage: car-grpc-cpp-server [--port N] [--bind ADDR] [--threads T]\n"
            "  --port N     TCP port, 0 (default) picks a free one\n"
            "  --bind ADDR  IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
            "  --threads T  completion-queue threads that poll and serve (default 1)\n");
}

// Parses a decimal in [lo, hi] or returns false.
bool ParseInt(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = static_cast<int>(v);
    return true;
}

struct Options {
    int port = 0;
    std::string bind = "127.0.0.1";
    int threads = 1;  // as shootout car-server's --threads
};

// Returns -1 to go on, else the exit code.
int ParseArgs(int argc, char **argv, Options *opt) {
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            Usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "car-grpc-cpp-server: %s needs a value\n", arg.c_str());
            Usage(stderr);
            return 2;
        }
        const char *val = argv[++i];
        bool good;
        if (arg == "--port")
            good = ParseInt(val, 0, 65535, &opt->port);
        else if (arg == "--threads")
            good = ParseInt(val, 1, kMaxThreads, &opt->threads);
        else if (arg == "--bind") {
            opt->bind = val;
            good = !opt->bind.empty();
        } else {
            fprintf(stderr, "car-grpc-cpp-server: unknown option %s\n", arg.c_str());
            Usage(stderr);
            return 2;
        }
        if (!good) {
            fprintf(stderr, "car-grpc-cpp-server: bad value for %s: '%s'\n", arg.c_str(), val);
            return 2;
        }
    }
    return -1;
}

void Serve(grpc::ServerCompletionQueue *cq, MessageService::AsyncService *car, Health::AsyncService *health) {
    new UnaryCall<MessageService::AsyncService, Message, Result>(car, cq, &MessageService::AsyncService::Requestsend,
                                                                 HandleSend);
    new UnaryCall<Health::AsyncService, HealthCheckRequest, HealthCheckResponse>(
        health, cq, &Health::AsyncService::RequestCheck, HandleCheck);
    void *tag;
    bool ok;
    while (cq->Next(&tag, &ok))
        static_cast<Tag *>(tag)->Proceed(ok);
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    int rc = ParseArgs(argc, argv, &opt);
    if (rc >= 0)
        return rc;

    // Blocked before gRPC starts any thread, so that all of them inherit the
    // mask and the signals reach only sigwait() below.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    // An IPv6 address goes in brackets, in gRPC's address and in our line.
    bool ipv6 = opt.bind.find(':') != std::string::npos && opt.bind[0] != '[';
    std::string host = ipv6 ? "[" + opt.bind + "]" : opt.bind;
    MessageService::AsyncService car;
    Health::AsyncService health;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(host + ":" + std::to_string(opt.port), grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&car);
    builder.RegisterService(&health);
    builder.SetMaxReceiveMessageSize(kMaxReceiveMessageSize);
    // gRPC sets SO_REUSEPORT by default, so a second server on a busy port
    // would start and silently share it; a benchmark must fail instead.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // Declared before the server so that they outlive it.
    std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs;
    for (int i = 0; i < opt.threads; i++)
        cqs.push_back(builder.AddCompletionQueue());
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) {
        fprintf(stderr, "car-grpc-cpp-server: cannot listen on %s:%d\n", host.c_str(), opt.port);
        return 1;
    }

    std::vector<std::thread> threads;
    for (auto &cq : cqs)
        threads.emplace_back(Serve, cq.get(), &car, &health);
    fprintf(stderr, "car-grpc-cpp-server listening on %s:%d\n", host.c_str(), port);

    int sig;
    while (sigwait(&stop_signals, &sig) != 0) {
    }
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    for (auto &cq : cqs)
        cq->Shutdown();
    for (auto &t : threads)
        t.join();
    return 0;
}
