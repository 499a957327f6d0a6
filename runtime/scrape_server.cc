#include "runtime/scrape_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

constexpr size_t kMaxHead = 8192;  // a longer request head is answered 404

// A listening, non-blocking TCP socket on host:port (port 0: a free one).
absl::StatusOr<int> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics endpoint ", host, ":", port, ": ", gai_strerror(rc)));
  }
  int fd =
      socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  const bool ok =
      fd >= 0 &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
      bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 64) == 0;
  const int err = errno;
  freeaddrinfo(found);
  if (!ok) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat(
        "metrics endpoint ", host, ":", port, ": cannot listen (",
        std::strerror(err), "); set metrics.prometheus_port to a free port"));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6
                   ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

// One client: its request head as read so far, then its response.
struct Connection {
  int fd = -1;
  int64_t deadline_ns = 0;
  std::string head;
  std::string response;  // set once the head is complete
  size_t sent = 0;
};

}  // namespace

struct ScrapeServer::Impl {
  ScrapeServerOptions options;
  Handler handler;
  int listen_fd = -1;
  int port = 0;
  int wake[2] = {-1, -1};  // a byte on wake[1] stops the thread
  std::thread thread;
  std::deque<Connection> open;  // oldest first; the thread's only

  ~Impl() {
    if (thread.joinable()) {
      const char stop = 1;
      if (write(wake[1], &stop, 1) != 1) std::perror("scrape server: stop");
      thread.join();
    }
    for (const Connection& c : open) close(c.fd);
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  void Serve() {
    std::vector<pollfd> fds;
    for (;;) {
      CloseExpired();
      fds.assign({{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}});
      for (const Connection& c : open) {
        fds.push_back(
            {c.fd, static_cast<short>(c.response.empty() ? POLLIN : POLLOUT),
             0});
      }
      if (poll(fds.data(), fds.size(), PollTimeoutMs()) < 0) {
        if (errno == EINTR) continue;
        std::perror("scrape server: poll");
        return;
      }
      if (fds[1].revents != 0) return;
      // Progress each ready connection; closed ones leave afterwards.
      for (size_t i = 0; i < open.size(); ++i) {
        if (fds[i + 2].revents != 0 && !Progress(open[i])) {
          close(open[i].fd);
          open[i].fd = -1;
        }
      }
      open.erase(std::remove_if(open.begin(), open.end(),
                                [](const Connection& c) { return c.fd < 0; }),
                 open.end());
      if (fds[0].revents != 0) AcceptAll();
    }
  }

  void CloseExpired() {
    const int64_t now = SteadyNowNs();
    auto expired = [&](const Connection& c) {
      if (c.deadline_ns > now) return false;
      close(c.fd);
      return true;
    };
    open.erase(std::remove_if(open.begin(), open.end(), expired), open.end());
  }

  int PollTimeoutMs() const {
    if (open.empty()) return -1;
    int64_t first = open.front().deadline_ns;
    for (const Connection& c : open) first = std::min(first, c.deadline_ns);
    return static_cast<int>(
        std::max<int64_t>(0, (first - SteadyNowNs()) / 1000000 + 1));
  }

  void AcceptAll() {
    for (;;) {
      const int fd =
          accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;  // EAGAIN: none left (or a transient error)
      if (static_cast<int>(open.size()) >= options.max_connections) {
        close(open.front().fd);  // the oldest gives way
        open.pop_front();
      }
      Connection c;
      c.fd = fd;
      c.deadline_ns =
          SteadyNowNs() + absl::ToInt64Nanoseconds(options.deadline);
      open.push_back(std::move(c));
    }
  }

  // Reads what the client sent, answers once its head is complete, writes
  // what the socket takes. False: the exchange is over (done or failed).
  bool Progress(Connection& c) {
    if (c.response.empty()) {
      char buf[2048];
      for (;;) {
        const ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n == 0) return false;
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          return false;
        }
        c.head.append(buf, static_cast<size_t>(n));
        if (c.head.size() >= kMaxHead) break;
      }
      if (c.head.find("\r\n\r\n") == std::string::npos &&
          c.head.size() < kMaxHead) {
        return true;  // more to come
      }
      c.response = Answer(c.head);
    }
    while (c.sent < c.response.size()) {
      const ssize_t n = send(c.fd, c.response.data() + c.sent,
                             c.response.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) return false;  // the client left; it will ask again
      c.sent += static_cast<size_t>(n);
    }
    return false;
  }

  std::string Answer(const std::string& head) const {
    Response r{404, "text/plain", "not found\n"};
    if (absl::StartsWith(head, "GET ")) {
      const size_t end = head.find(' ', 4);
      if (end != std::string::npos) r = handler(head.substr(4, end - 4));
    }
    return absl::StrCat("HTTP/1.1 ", r.code == 200 ? "200 OK" : "404 Not Found",
                        "\r\nContent-Type: ", r.content_type,
                        "\r\nContent-Length: ", r.body.size(),
                        "\r\nConnection: close\r\n\r\n", r.body);
  }
};

absl::StatusOr<std::unique_ptr<ScrapeServer>> ScrapeServer::Start(
    const ScrapeServerOptions& options, Handler handler) {
  absl::StatusOr<int> fd = Listen(options.host, options.port);
  if (!fd.ok()) return fd.status();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  impl->listen_fd = *fd;
  impl->port = BoundPort(*fd);
  if (pipe2(impl->wake, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("metrics endpoint: pipe: ", std::strerror(errno)));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Serve(); });
  return std::unique_ptr<ScrapeServer>(new ScrapeServer(std::move(impl)));
}

ScrapeServer::ScrapeServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ScrapeServer::~ScrapeServer() = default;

int ScrapeServer::port() const { return impl_->port; }

}  // namespace rlvla3
