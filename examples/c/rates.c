/* The rates client of the cross-language demo, in C: fetches a rate over HTTP/1.0 (a
 * plain socket, no libcurl) through retryrs with the policy "rates" of
 * examples/policies.json (the file the Python and Node clients read too; another file with
 * RETRYRS_POLICIES=path). Retryable statuses are transient (with the Retry-After header as the hint),
 * any other non-200 status permanent; connection errors are transient. One line per
 * retry and a success line, from the events:
 *
 *   [   3 ms] attempt 1 failed: HTTP 503 -> waiting 51 ms
 *   [1210 ms] success: EUR/USD 1.0842 (attempt 4)
 *
 * Usage: rates [--event-loop] http://127.0.0.1:PORT/<session>/rates/EURUSD
 * Exit 0 on success, 1 otherwise. With --event-loop the same call is driven through the
 * sans-IO engine (retryrs_call_*) by a poll()-based loop instead of the blocking
 * retryrs_retrier_call: the output is the same, which is the point.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "retryrs.h"

typedef struct {
  char host[256], port[16], path[1024];
} url;

/* What the last attempt got: a body on success, a failure description otherwise. */
typedef struct {
  url target;
  char body[256];
  char failure[512];
} fetch_state;

static int parse_url(const char *text, url *u) {
  const char *rest, *slash, *colon;
  size_t host_len;
  if (strncmp(text, "http://", 7) != 0) return -1;
  rest = text + 7;
  slash = strchr(rest, '/');
  if (!slash) slash = rest + strlen(rest);
  colon = memchr(rest, ':', (size_t)(slash - rest));
  host_len = (size_t)((colon ? colon : slash) - rest);
  if (host_len == 0 || host_len >= sizeof u->host) return -1;
  memcpy(u->host, rest, host_len);
  u->host[host_len] = 0;
  if (colon) {
    size_t n = (size_t)(slash - colon - 1);
    if (n == 0 || n >= sizeof u->port) return -1;
    memcpy(u->port, colon + 1, n);
    u->port[n] = 0;
  } else {
    strcpy(u->port, "80");
  }
  snprintf(u->path, sizeof u->path, "%s", *slash ? slash : "/");
  return 0;
}

/* GET over HTTP/1.0: the whole response (the server closes the connection) into buf.
 * Returns its length, or -1 with `why` set. */
static long http_get(const url *u, char *buf, size_t cap, char *why, size_t why_len) {
  struct addrinfo hints, *res = NULL, *ai;
  char request[1400];
  int fd = -1, rc;
  size_t got = 0;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if ((rc = getaddrinfo(u->host, u->port, &hints, &res)) != 0) {
    snprintf(why, why_len, "cannot resolve %s: %s", u->host, gai_strerror(rc));
    return -1;
  }
  for (ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    if (fd >= 0) close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(why, why_len, "cannot connect to %s:%s", u->host, u->port);
    return -1;
  }
  snprintf(request, sizeof request, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", u->path, u->host);
  if (send(fd, request, strlen(request), 0) < 0) {
    snprintf(why, why_len, "send failed");
    close(fd);
    return -1;
  }
  for (;;) {
    ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
    if (n < 0) {
      snprintf(why, why_len, "recv failed");
      close(fd);
      return -1;
    }
    if (n == 0 || (got += (size_t)n) >= cap - 1) break;
  }
  close(fd);
  buf[got] = 0;
  return (long)got;
}

/* The value of header `name` (case-insensitive) in the head of `response`, or NULL;
 * written into out. */
static const char *header(const char *response, const char *name, char *out, size_t cap) {
  const char *line = strstr(response, "\r\n");
  size_t len = strlen(name);
  while (line && strncmp(line, "\r\n\r\n", 4) != 0) {
    line += 2;
    if (strncasecmp(line, name, len) == 0 && line[len] == ':') {
      const char *v = line + len + 1, *end = strstr(v, "\r\n");
      size_t n = end ? (size_t)(end - v) : strlen(v);
      if (n >= cap) n = cap - 1;
      memcpy(out, v, n);
      out[n] = 0;
      return out;
    }
    line = strstr(line, "\r\n");
  }
  return NULL;
}

static retryrs_verdict fetch(void *user_data, uint32_t attempt, double *hint_ms) {
  fetch_state *st = (fetch_state *)user_data;
  static char response[65536];
  char retry_after[64];
  const char *body;
  int status;
  (void)attempt;
  if (http_get(&st->target, response, sizeof response, st->failure, sizeof st->failure) < 0)
    return RETRYRS_TRANSIENT; /* connection trouble: worth another try */
  if (sscanf(response, "HTTP/%*d.%*d %d", &status) != 1) {
    snprintf(st->failure, sizeof st->failure, "malformed response");
    return RETRYRS_PERMANENT;
  }
  body = strstr(response, "\r\n\r\n");
  body = body ? body + 4 : "";
  if (status == 200) {
    snprintf(st->body, sizeof st->body, "%s", body);
    return RETRYRS_SUCCESS;
  }
  snprintf(st->failure, sizeof st->failure, "HTTP %d", status);
  if (!retryrs_is_retryable_status(status)) return RETRYRS_PERMANENT;
  if (header(response, "Retry-After", retry_after, sizeof retry_after)) {
    bool has = false;
    uint64_t ms = 0;
    if (retryrs_parse_retry_after(retry_after, &has, &ms) == RETRYRS_OK && has) *hint_ms = (double)ms;
  }
  return RETRYRS_TRANSIENT;
}

static const char *reason_name(retryrs_reason r) {
  return r == RETRYRS_REASON_ATTEMPTS ? "attempts" : r == RETRYRS_REASON_DEADLINE ? "deadline" : r == RETRYRS_REASON_BUDGET ? "budget" : "retry_after";
}

static void on_event(void *user_data, const retryrs_event *e) {
  const fetch_state *st = (const fetch_state *)user_data;
  unsigned long long at = (unsigned long long)e->elapsed_ms;
  switch (e->kind) {
    case RETRYRS_EVENT_RETRYING:
      printf("[%4llu ms] attempt %u failed: %s -> waiting %llu ms\n", at, e->attempt, st->failure,
             (unsigned long long)e->delay_ms);
      break;
    case RETRYRS_EVENT_SUCCESS:
      printf("[%4llu ms] success: %s (attempt %u)\n", at, st->body, e->attempt);
      break;
    case RETRYRS_EVENT_REJECTED:
      printf("[%4llu ms] attempt %u failed: %s -> giving up (not retryable)\n", at, e->attempt, st->failure);
      break;
    case RETRYRS_EVENT_EXHAUSTED:
      printf("[%4llu ms] attempt %u failed: %s -> giving up (%s)\n", at, e->attempt, st->failure,
             reason_name(e->reason));
      break;
    case RETRYRS_EVENT_CANCELLED:
      printf("[%4llu ms] cancelled after attempt %u\n", at, e->attempt);
      break;
    default: break;
  }
  fflush(stdout);
}

/* The same call for a program that owns its event loop: the engine says what to do,
 * the loop does it (here poll() stands in for the loop's timer; a libuv or epoll
 * program would arm a timer and return to its loop instead). */
static retryrs_status run_event_loop(const retryrs_retrier *retrier, fetch_state *st, const retryrs_listener *l) {
  retryrs_call *call = NULL;
  retryrs_step step = {RETRYRS_ACTION_ATTEMPT, 0, 1, RETRYRS_OK, RETRYRS_REASON_NONE};
  retryrs_status status = retryrs_call_start(retrier, retryrs_now_ms(), l, &call);
  while (status == RETRYRS_OK && step.action != RETRYRS_ACTION_STOP) {
    if (step.action == RETRYRS_ACTION_ATTEMPT) {
      double hint_ms = -1;
      retryrs_verdict verdict = fetch(st, step.attempt, &hint_ms);
      status = retryrs_call_report(call, verdict, hint_ms, retryrs_now_ms(), &step);
    } else {
      uint64_t now = retryrs_now_ms();
      uint64_t until = step.delay_ms > UINT64_MAX - now ? UINT64_MAX : now + step.delay_ms;
      while ((now = retryrs_now_ms()) < until) poll(NULL, 0, until - now > 60000 ? 60000 : (int)(until - now));
      status = retryrs_call_after_wait(call, retryrs_now_ms(), &step);
    }
  }
  retryrs_call_free(call);
  return status != RETRYRS_OK ? status : step.outcome;
}

/* The policy `name` of the policy file (RETRYRS_POLICIES, else examples/policies.json,
 * from the repository root as `make demo` runs it). The document stays loaded: the
 * config's name points into it. */
static retryrs_policies *load_policy(const char *name, retryrs_config *config) {
  const char *file = getenv("RETRYRS_POLICIES") ? getenv("RETRYRS_POLICIES") : "examples/policies.json";
  static char text[1 << 16];
  retryrs_policies *policies = NULL;
  size_t len;
  FILE *f = fopen(file, "rb");
  if (!f) {
    fprintf(stderr, "rates: cannot open %s\n", file);
    return NULL;
  }
  len = fread(text, 1, sizeof text, f);
  fclose(f);
  if (retryrs_policies_from_json(text, len, &policies) != RETRYRS_OK ||
      retryrs_policies_get(policies, name, config) != RETRYRS_OK) {
    fprintf(stderr, "rates: %s: %s\n", file, retryrs_last_error());
    retryrs_policies_free(policies);
    return NULL;
  }
  return policies;
}

int main(int argc, char **argv) {
  static fetch_state st;
  retryrs_config config;
  retryrs_retrier *retrier = NULL;
  retryrs_policies *policies;
  retryrs_listener listener = {on_event, &st};
  retryrs_status status;
  int event_loop = argc == 3 && strcmp(argv[1], "--event-loop") == 0;
  if (argc != 2 + event_loop || parse_url(argv[argc - 1], &st.target) != 0) {
    fprintf(stderr, "usage: %s [--event-loop] http://HOST:PORT/<session>/rates/EURUSD\n", argv[0]);
    return 1;
  }
  policies = load_policy("rates", &config);
  if (!policies) return 1;
  status = retryrs_retrier_new(&config, &retrier);
  retryrs_policies_free(policies); /* the retrier copied what it keeps */
  if (status != RETRYRS_OK) {
    fprintf(stderr, "rates: %s\n", retryrs_last_error());
    return 1;
  }
  status = event_loop ? run_event_loop(retrier, &st, &listener)
                      : retryrs_retrier_call(retrier, fetch, &st, &listener, NULL, NULL);
  if (status != RETRYRS_OK) fprintf(stderr, "rates: %s\n", event_loop ? retryrs_status_name(status) : retryrs_last_error());
  retryrs_retrier_free(retrier);
  return status == RETRYRS_OK ? 0 : 1;
}
