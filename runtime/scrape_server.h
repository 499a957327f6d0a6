// File: runtime/scrape_server.h
// -----------------------------------------------------------------------------
// ScrapeServer: the smallest HTTP/1.1 server a /metrics endpoint needs, on
// one thread that never waits on one client. Every connection is
// non-blocking and polled together; each has `deadline` from its accept to
// read its request head and take its response, then it is closed
// (`Connection: close`). At `max_connections` open, the oldest is dropped to
// take a new one, so a client that sends a byte a second (slowloris), or
// never reads, holds a slot for `deadline` at most and never a scrape.
//
// (Why not prometheus-cpp's exposer, civetweb: in a process that links
// Debian's LibTorch it does not start: "null context when constructing
// CivetServer" with the port free, measured 2026-11-28; the same exposer
// alone starts. docs/kubernetes.md "Metrics".)
//
// Example:
//   absl::StatusOr<std::unique_ptr<ScrapeServer>> s = ScrapeServer::Start(
//       {.host = "127.0.0.1", .port = 0},
//       [](const std::string& path) -> ScrapeServer::Response {
//         return {200, "text/plain", "ok\n"};
//       });
//   ... (*s)->port() ...  // the destructor stops the thread, closes all
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_SCRAPE_SERVER_H_
#define RLVLA3_RUNTIME_SCRAPE_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rlvla3 {

struct ScrapeServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                                // 0: a free port
  absl::Duration deadline = absl::Seconds(2);  // per connection, from accept
  int max_connections = 64;  // open at once; the oldest gives way
};

class ScrapeServer {
 public:
  struct Response {
    int code = 200;  // 200 or 404
    std::string content_type;
    std::string body;
  };
  // Called on the server's thread with the request's path ("/metrics?x").
  using Handler = std::function<Response(const std::string& path)>;

  // Listens (an address in use is an error naming it) and starts the thread.
  static absl::StatusOr<std::unique_ptr<ScrapeServer>> Start(
      const ScrapeServerOptions& options, Handler handler);
  ~ScrapeServer();
  ScrapeServer(const ScrapeServer&) = delete;
  ScrapeServer& operator=(const ScrapeServer&) = delete;

  int port() const;

  struct Impl;

 private:
  explicit ScrapeServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_SCRAPE_SERVER_H_
