/* An HTTP request with libcurl's easy API, retried by retryrs: the rates client of the
 * cross-language demo, and the C counterpart of Python's retryrs.http and Node's
 * retryrs/fetch. The blocking retryrs_retrier_call drives it; every decision is the
 * core's: which outcomes are transient (retryrs_http_classify), the waits, the deadline.
 * This file only says what happened to each request.
 *
 *   curl_get [-X METHOD] [-d BODY] [-H 'Name: value']... [-o FILE] [--max-attempts N]
 *            [--deadline MS|none] [--attempt-timeout MS] [--initial-delay MS]
 *            [--max-retry-after MS|none] [--jitter none] [--connect-timeout MS] URL
 *
 * Every attempt is bounded by the time the core gives it (retryrs_attempt_remaining_ms:
 * what is left before the deadline, or the smaller attempt timeout): that is the
 * request's CURLOPT_TIMEOUT_MS, so a server that never answers cannot hold the call past
 * its deadline. libcurl's easy API reads the whole body before curl_easy_perform returns,
 * so this client reads the body inside the attempt (docs/contract.md 6b): the bound
 * covers it, and a body that stalls or outlasts it is a timed-out attempt, retried where
 * the method allows. Connecting has its own, shorter timeout (--connect-timeout, default
 * 3000 ms, within the bound); a request that timed out before it was sent (no connection
 * was made) is a connect failure, retried for every method, POST included. A response
 * with a retryable status is read only up to a 64 KiB prefix (enough to keep a small
 * error page's connection for the next attempt); past that the connection is dropped
 * rather than the body read whole. Only the last attempt by count reads it whole: the
 * engine decides after the attempt whether a response is retried, and libcurl's easy API
 * cannot hold a body unread until then. So a call the deadline (or a too long
 * Retry-After) ends on a longer retryable response hands over its 64 KiB prefix, and
 * says so ("body cut at 64 KiB"). -o writes the answer's body to FILE.
 *
 * Prints the request (URL redacted: no credentials, no signature values), one line per
 * retry and how the call ended:
 *
 *   GET http://127.0.0.1:PORT/c/rates/EURUSD
 *   [   3 ms] attempt 1 failed: HTTP 503 -> waiting 103 ms
 *   [1117 ms] success: EUR/USD 1.0842 (attempt 4)
 *
 * Out of retries on a status, the last response is the answer (printed, as curl would
 * show it); on a network failure, the call is exhausted. Exit 0 for a 2xx answer, 1
 * otherwise. Default policy, name "rates", seed 42: the waits match the other hosts'.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "retryrs.h"

/* How much of a response that will be retried is read: enough for an error page (and
 * to keep its connection for the next attempt), never a huge body read whole. */
#define RETRIED_PREFIX (64 * 1024)

/* The last attempt's answer: a response (status and body) or a network failure. */
typedef struct {
  CURL *curl;
  const char *method;
  const char *idempotency_key; /* the request's Idempotency-Key header's value, or NULL */
  long connect_timeout_ms;
  uint64_t max_attempts;       /* the policy's: the last attempt by count reads whole */
  uint32_t attempt;            /* this attempt's number */
  char *body;                  /* this response's body (heap, NUL-terminated) */
  size_t body_len, body_cap;
  int out_of_memory;
  const char *out_path;        /* -o: where the answer's body goes */
  size_t body_seen;     /* bytes of this response's body received */
  int judged;           /* whether this response's status was classified yet */
  int retried;          /* this response will be retried: read a prefix only */
  int cut;              /* ...and its body was cut at the prefix */
  int sent;             /* a connection was made and the request went out */
  long status;          /* 0 when no response arrived */
  char failure[256];    /* what the event lines say about a failed attempt */
} request_state;

/* Appends to the body buffer, growing it (NUL-terminated); 0 when memory ran out. */
static int keep(request_state *st, const char *data, size_t len) {
  if (st->body_len + len + 1 > st->body_cap) {
    size_t cap = st->body_cap ? st->body_cap : 4096;
    char *grown;
    while (cap < st->body_len + len + 1) cap *= 2;
    grown = (char *)realloc(st->body, cap);
    if (!grown) return 0;
    st->body = grown;
    st->body_cap = cap;
  }
  memcpy(st->body + st->body_len, data, len);
  st->body_len += len;
  st->body[st->body_len] = 0;
  return 1;
}

static size_t on_body(char *data, size_t size, size_t n, void *user_data) {
  request_state *st = (request_state *)user_data;
  size_t len = size * n;
  if (!st->judged) {
    /* The first body bytes: the status is known. A response the core will retry is not
     * the answer, so its body is read only up to RETRIED_PREFIX. */
    long status = 0;
    retryrs_verdict v = RETRYRS_SUCCESS;
    st->judged = 1;
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    st->retried = retryrs_http_classify_request(st->method, st->idempotency_key, RETRYRS_HTTP_RESPONSE, (int)status,
                                                NULL, 0, NULL, 0, &v) == RETRYRS_OK &&
                  v == RETRYRS_TRANSIENT && st->attempt < st->max_attempts;
  }
  st->body_seen += len;
  if (st->retried && st->body_seen > RETRIED_PREFIX) {
    st->cut = 1;
    return 0; /* libcurl stops (CURLE_WRITE_ERROR) and drops the connection */
  }
  if (!keep(st, data, len)) {
    st->out_of_memory = 1;
    return 0;
  }
  return len;
}

/* Called once a connection is made (or reused), just before the request is sent. */
static int on_sending(void *user_data, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                      int conn_local_port) {
  (void)conn_primary_ip;
  (void)conn_local_ip;
  (void)conn_primary_port;
  (void)conn_local_port;
  ((request_state *)user_data)->sent = 1;
  return CURL_PREREQFUNC_OK;
}

/* libcurl's failures in the core's words: no connection was made (nothing was sent, so
 * any method may be sent again), or it broke later. */
static retryrs_http_outcome outcome_of(CURLcode rc, int sent) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return RETRYRS_HTTP_CONNECT_FAILED;
    case CURLE_OPERATION_TIMEDOUT: /* the connect timeout, or the bound while connecting */
      return sent ? RETRYRS_HTTP_NETWORK_FAILED : RETRYRS_HTTP_CONNECT_FAILED;
    default:
      return RETRYRS_HTTP_NETWORK_FAILED;
  }
}

/* The attempt's bound from the core, as libcurl timeouts: the whole request within the
 * time left (0 would mean "no timeout" to libcurl: a bound that has passed is 1 ms), and
 * connecting within the connect timeout, if that is shorter. */
static void bound_the_request(request_state *st) {
  uint64_t left = RETRYRS_UNBOUNDED;
  long total = 0, connect = st->connect_timeout_ms;
  if (retryrs_attempt_remaining_ms(&left) == RETRYRS_OK && left != RETRYRS_UNBOUNDED)
    total = left == 0 ? 1 : left > (uint64_t)LONG_MAX ? LONG_MAX : (long)left;
  if (total > 0 && (connect <= 0 || total < connect)) connect = total;
  curl_easy_setopt(st->curl, CURLOPT_TIMEOUT_MS, total);
  curl_easy_setopt(st->curl, CURLOPT_CONNECTTIMEOUT_MS, connect);
}

static retryrs_verdict attempt(void *user_data, uint32_t n, double *hint_ms) {
  request_state *st = (request_state *)user_data;
  retryrs_verdict verdict = RETRYRS_PERMANENT;
  retryrs_http_outcome outcome = RETRYRS_HTTP_RESPONSE;
  CURLcode rc;
  st->attempt = n;
  st->body_len = 0;
  if (st->body) st->body[0] = 0;
  st->body_seen = 0;
  st->judged = st->retried = st->cut = st->sent = 0;
  st->status = 0;
  bound_the_request(st);
  rc = curl_easy_perform(st->curl);
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && st->cut)) {
    /* A response (a retried one cut at its prefix included): its status decides. */
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &st->status);
    snprintf(st->failure, sizeof st->failure, "HTTP %ld", st->status);
  } else {
    outcome = outcome_of(rc, st->sent);
    /* curl_easy_strerror is generic text: it never carries the URL. */
    snprintf(st->failure, sizeof st->failure, "%s%s", curl_easy_strerror(rc),
             outcome == RETRYRS_HTTP_CONNECT_FAILED ? " (not sent)" : "");
  }
  if (st->out_of_memory) {
    snprintf(st->failure, sizeof st->failure, "out of memory for the body");
    return RETRYRS_PERMANENT;
  }
  if (retryrs_http_classify_request(st->method, st->idempotency_key, outcome, (int)st->status, NULL, 0, NULL, 0,
                                    &verdict) != RETRYRS_OK) {
    snprintf(st->failure, sizeof st->failure, "classify: %s", retryrs_last_error());
    return RETRYRS_PERMANENT;
  }
  if (verdict == RETRYRS_TRANSIENT && outcome == RETRYRS_HTTP_RESPONSE) {
    /* libcurl parses Retry-After itself (seconds or HTTP-date) since 7.66.0. */
    curl_off_t seconds = 0;
    if (curl_easy_getinfo(st->curl, CURLINFO_RETRY_AFTER, &seconds) == CURLE_OK && seconds > 0)
      *hint_ms = (double)seconds * 1000.0;
  }
  return verdict;
}

static const char *reason_name(retryrs_reason r) {
  switch (r) {
    case RETRYRS_REASON_ATTEMPTS: return "attempts";
    case RETRYRS_REASON_DEADLINE: return "deadline";
    case RETRYRS_REASON_BUDGET: return "budget";
    case RETRYRS_REASON_RETRY_AFTER: return "retry_after"; /* past max_retry_after */
    default: return "unknown";
  }
}

static const char *shown_body(const request_state *st) {
  return st->body ? st->body : "";
}

static void on_event(void *user_data, const retryrs_event *e) {
  const request_state *st = (const request_state *)user_data;
  unsigned long long at = (unsigned long long)e->elapsed_ms;
  switch ((enum retryrs_event_kind)e->kind) {
    case RETRYRS_EVENT_RETRYING:
      printf("[%4llu ms] attempt %u failed: %s -> waiting %llu ms\n", at, e->attempt, st->failure,
             (unsigned long long)e->delay_ms);
      break;
    case RETRYRS_EVENT_SUCCESS:
      if (st->status >= 200 && st->status < 300)
        printf("[%4llu ms] success: %s (attempt %u)\n", at, st->out_path ? "(body written)" : shown_body(st), e->attempt);
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

int main(int argc, char **argv) {
  static request_state st;
  retryrs_config config;
  retryrs_retrier *retrier = NULL;
  retryrs_listener listener = {on_event, &st};
  retryrs_outcome out;
  retryrs_status status;
  const char *url = NULL, *data = NULL;
  struct curl_slist *headers = NULL;
  char shown[2048];
  int i, code = 1;
  st.method = "GET";
  st.connect_timeout_ms = 3000;
  retryrs_config_default(&config);
  config.name = "rates";
  config.has_seed = true;
  config.seed = 42;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-X") == 0 && i + 1 < argc) st.method = argv[++i];
    else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) data = argv[++i];
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) st.out_path = argv[++i];
    else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc) {
      const char *h = argv[++i];
      struct curl_slist *more = curl_slist_append(headers, h);
      if (!more) {
        fprintf(stderr, "curl_get: out of memory for -H\n");
        curl_slist_free_all(headers);
        return 2;
      }
      headers = more;
      if (strncasecmp(h, "Idempotency-Key:", 16) == 0) {
        st.idempotency_key = h + 16;
        while (*st.idempotency_key == ' ') st.idempotency_key++;
      }
    } else if (strcmp(argv[i], "--max-attempts") == 0 && i + 1 < argc) config.max_attempts = (uint64_t)atoi(argv[++i]);
    else if (strcmp(argv[i], "--deadline") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      config.has_deadline = strcmp(v, "none") != 0;
      if (config.has_deadline) config.deadline_ms = atof(v);
    } else if (strcmp(argv[i], "--max-retry-after") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      config.has_max_retry_after = strcmp(v, "none") != 0;
      if (config.has_max_retry_after) config.max_retry_after_ms = atof(v);
    } else if (strcmp(argv[i], "--initial-delay") == 0 && i + 1 < argc) config.initial_delay_ms = atof(argv[++i]);
    else if (strcmp(argv[i], "--jitter") == 0 && i + 1 < argc && strcmp(argv[i + 1], "none") == 0) {
      config.jitter = RETRYRS_JITTER_NONE;
      i++;
    }
    else if (strcmp(argv[i], "--attempt-timeout") == 0 && i + 1 < argc) {
      config.has_attempt_timeout = true;
      config.attempt_timeout_ms = atof(argv[++i]);
    } else if (strcmp(argv[i], "--connect-timeout") == 0 && i + 1 < argc) st.connect_timeout_ms = atol(argv[++i]);
    else if (!url && argv[i][0] != '-') url = argv[i];
    else url = NULL, i = argc;
  }
  if (!url) {
    fprintf(stderr,
            "usage: %s [-X METHOD] [-d BODY] [-H 'Name: value']... [-o FILE] [--max-attempts N]\n"
            "       [--deadline MS|none] [--attempt-timeout MS] [--initial-delay MS] [--max-retry-after MS|none]\n"
            "       [--jitter none] [--connect-timeout MS] URL\n",
            argv[0]);
    curl_slist_free_all(headers);
    return 2;
  }
  st.max_attempts = config.max_attempts;
  if (retryrs_redact_url(url, shown, sizeof shown, NULL) != RETRYRS_OK ||
      retryrs_retrier_new(&config, &retrier) != RETRYRS_OK) {
    fprintf(stderr, "curl_get: %s\n", retryrs_last_error());
    curl_slist_free_all(headers);
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  st.curl = curl_easy_init();
  if (!st.curl) {
    fprintf(stderr, "curl_get: curl_easy_init failed\n");
    retryrs_retrier_free(retrier);
    curl_slist_free_all(headers);
    return 2;
  }
  curl_easy_setopt(st.curl, CURLOPT_URL, url);
  if (headers) curl_easy_setopt(st.curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(st.curl, CURLOPT_CUSTOMREQUEST, st.method);
  if (strcmp(st.method, "HEAD") == 0) curl_easy_setopt(st.curl, CURLOPT_NOBODY, 1L);
  if (data) curl_easy_setopt(st.curl, CURLOPT_POSTFIELDS, data); /* a buffer: replayable */
  curl_easy_setopt(st.curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(st.curl, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(st.curl, CURLOPT_PREREQFUNCTION, on_sending);
  curl_easy_setopt(st.curl, CURLOPT_PREREQDATA, &st);
  curl_easy_setopt(st.curl, CURLOPT_NOSIGNAL, 1L);
  /* The timeouts are set per attempt, from the core's bound (bound_the_request). */
  printf("%s %s\n", st.method, shown);
  fflush(stdout);

  status = retryrs_retrier_call(retrier, attempt, &st, &listener, NULL, &out);
  if (st.status != 0 && (status == RETRYRS_OK || status == RETRYRS_EXHAUSTED)) {
    /* A response is the answer, whether it came first time or retries ran out on it. */
    if (status != RETRYRS_OK || st.status < 200 || st.status >= 300)
      printf("response: HTTP %ld after %u attempt%s: %s%s\n", st.status, out.attempts, out.attempts == 1 ? "" : "s",
             st.out_path ? "(body written)" : shown_body(&st), st.cut ? " (body cut at 64 KiB)" : "");
    code = st.status >= 200 && st.status < 300 ? 0 : 1;
    if (st.out_path) {
      FILE *f = fopen(st.out_path, "wb");
      if (!f || fwrite(st.body ? st.body : "", 1, st.body_len, f) != st.body_len) {
        fprintf(stderr, "curl_get: cannot write %s\n", st.out_path);
        code = 1;
      }
      if (f && fclose(f) != 0) code = 1;
    }
  } else if (status == RETRYRS_EXHAUSTED) {
    printf("gave up after %u attempts (%s): %s\n", out.attempts, reason_name(out.reason), st.failure);
  } else {
    printf("failed: %s\n", status == RETRYRS_REJECTED ? st.failure : retryrs_last_error());
  }
  curl_easy_cleanup(st.curl);
  curl_slist_free_all(headers);
  curl_global_cleanup();
  retryrs_retrier_free(retrier);
  free(st.body);
  return code;
}
