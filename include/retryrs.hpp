/*
 * retryrs.hpp: the C++17 API of retryrs, header-only over the C API (retryrs.h).
 *
 * Link exactly as for C (-lretryrs, `pkg-config --cflags --libs retryrs`, or CMake's
 * retryrs::retryrs_cpp target, which adds C++17). Every decision is the library's; this
 * header only owns handles, converts std::chrono durations and runs lambdas.
 *
 *   retryrs::Retrier retrier(retryrs::Config().name("rates").initial_delay(100ms));
 *   auto result = retrier.run(
 *       [&](std::uint32_t) { return fetch(); },                     // the attempt
 *       [](const Reply& r) {                                       // the predicate
 *         return r.status == 503 ? retryrs::Verdict::transient(r.retry_after)
 *                                : retryrs::Verdict::success();
 *       },
 *       [](const retryrs::Event& e) { log(e.name(), e.kind(), e.delay()); });  // listener
 *   if (result.ok()) use(*result.value);
 *
 * Ownership: Retrier, Budget, CancelToken and Policies own their C handles (RAII);
 *   Retrier, Budget and Policies move, CancelToken copies (every copy cancels the same
 *   token). A retrier keeps its own reference to its budget.
 * Errors: a C status of RETRYRS_INVALID_ARGUMENT or RETRYRS_INTERNAL_ERROR is thrown as
 *   retryrs::Error (status() and what(), the library's message). How a call ended
 *   (OK, REJECTED, EXHAUSTED, CANCELLED) is returned in an Outcome, not thrown. The
 *   factories (Retrier::make, Budget::make, Policies::parse, find, make_retrier) return
 *   a retryrs::Expected instead of throwing, in every build.
 * Without exceptions (-fno-exceptions): the throwing constructors and lookups are left
 *   out; use the factories, and read a call's INVALID_ARGUMENT or INTERNAL_ERROR from its
 *   Outcome (status, and retryrs_last_error() for the message). Callbacks cannot throw
 *   there. Misuse that has no status to return (a moved-from handle) prints the
 *   library's message and aborts, as the standard library does without exceptions.
 * Cost: call() and run() allocate nothing per call (a listener lambda converted to
 *   std::function may, if its captures do not fit std::function's own buffer: keep one
 *   Listener and pass it). With a listener, a call runs under a cancel token of its own,
 *   reused from call to call on its thread; given a CancelToken as well, that own token
 *   is a child of it, made for the call.
 * Exceptions in callbacks: a C++ exception thrown by an attempt, a predicate or a
 *   listener never unwinds through the library. It is caught at the boundary, the call is
 *   stopped at once (an attempt ends as a permanent failure; a listener's exception fires
 *   the call's own cancel token, so an announced wait is not waited out), no callback of
 *   that call runs again, and the exception is rethrown to the caller of call()/run() once
 *   the library has returned.
 * Threads: as in C. A Retrier is immutable and may run calls on many threads at once;
 *   callbacks run on the calling thread; a CancelToken may be fired from any thread.
 */
#ifndef RETRYRS_HPP
#define RETRYRS_HPP

#if !defined(__cplusplus) || (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error "retryrs.hpp needs C++17 or later (-std=c++17); from C or older C++, include retryrs.h, the C API"
#else  // the rest of the header only for C++17: the #error above is the one message

// Whether C++ exceptions are on (off under -fno-exceptions): the throwing API and the
// catching of callbacks' exceptions exist only then.
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define RETRYRS_HPP_EXCEPTIONS 1
#else
#define RETRYRS_HPP_EXCEPTIONS 0
#endif

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "retryrs.h"

namespace retryrs {

/// Fractional milliseconds, the unit of every duration the C API takes.
using Millis = std::chrono::duration<double, std::milli>;

/// A C status other than the outcomes of a call: RETRYRS_INVALID_ARGUMENT or
/// RETRYRS_INTERNAL_ERROR, with the library's message.
class Error : public std::runtime_error {
 public:
  Error(retryrs_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  retryrs_status status() const noexcept { return status_; }

 private:
  retryrs_status status_;
};

/// A value or the error that kept it from being made: what the factories return, in
/// every build (the only way to report an error without exceptions).
template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Expected(retryrs_status status, std::string message) : status_(status), message_(std::move(message)) {}
  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  /// RETRYRS_OK, or why there is no value.
  retryrs_status status() const noexcept { return status_; }
  /// The library's message ("" when ok()).
  const std::string &message() const noexcept { return message_; }
  /// The value; only when ok().
  T &value() & noexcept { return *value_; }
  T &&value() && noexcept { return std::move(*value_); }
  T &operator*() & noexcept { return *value_; }
  T *operator->() noexcept { return &*value_; }

 private:
  std::optional<T> value_;
  retryrs_status status_ = RETRYRS_OK;
  std::string message_;
};

namespace detail {

/// A status that only misuse can make (a moved-from handle): thrown as Error, or, without
/// exceptions, the library's message printed and abort().
inline void check(retryrs_status status) {
  if (status == RETRYRS_OK) return;
#if RETRYRS_HPP_EXCEPTIONS
  throw Error(status, retryrs_last_error());
#else
  std::fprintf(stderr, "retryrs: %s\n", retryrs_last_error());
  std::abort();
#endif
}

/// `status` as an Expected: the value `make()` gives on RETRYRS_OK, else the error.
template <class T, class Make>
Expected<T> expect(retryrs_status status, Make &&make) {
  if (status != RETRYRS_OK) return Expected<T>(status, retryrs_last_error());
  return Expected<T>(make());
}

template <class Rep, class Period>
double to_ms(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration_cast<Millis>(d).count();
}

struct RetrierDelete {
  void operator()(retryrs_retrier *r) const noexcept { retryrs_retrier_free(r); }
};
struct BudgetDelete {
  void operator()(retryrs_budget *b) const noexcept { retryrs_budget_free(b); }
};
struct CancelDelete {
  void operator()(retryrs_cancel *c) const noexcept { retryrs_cancel_free(c); }
};
struct PoliciesDelete {
  void operator()(retryrs_policies *p) const noexcept { retryrs_policies_free(p); }
};

inline std::unique_ptr<retryrs_cancel, CancelDelete> new_cancel() {
  retryrs_cancel *raw = nullptr;
  check(retryrs_cancel_new(&raw));
  return std::unique_ptr<retryrs_cancel, CancelDelete>(raw);
}

}  // namespace detail

/// How an attempt ended, as an attempt callback or a predicate says it.
class Verdict {
 public:
  /// Also from a C verdict (RETRYRS_SUCCESS, RETRYRS_TRANSIENT, RETRYRS_PERMANENT,
  /// RETRYRS_TIMED_OUT).
  constexpr Verdict(retryrs_verdict kind) noexcept : kind_(kind) {}  // NOLINT: implicit on purpose
  static constexpr Verdict success() noexcept { return Verdict(RETRYRS_SUCCESS); }
  static constexpr Verdict transient() noexcept { return Verdict(RETRYRS_TRANSIENT); }
  /// A transient failure with a minimum wait (a Retry-After hint).
  template <class Rep, class Period>
  static Verdict transient(std::chrono::duration<Rep, Period> hint) {
    Verdict v(RETRYRS_TRANSIENT);
    v.hint_ms_ = detail::to_ms(hint);
    return v;
  }
  /// A transient failure whose hint, if any, is optional.
  static Verdict transient(std::optional<Millis> hint) {
    return hint ? transient(*hint) : transient();
  }
  static constexpr Verdict permanent() noexcept { return Verdict(RETRYRS_PERMANENT); }
  /// The attempt's own I/O ran out of its bound (Attempt's remaining time) and cut it: a
  /// transient failure whose retry a quota budget prices as a timeout's.
  static constexpr Verdict timed_out() noexcept { return Verdict(RETRYRS_TIMED_OUT); }

  retryrs_verdict kind() const noexcept { return kind_; }
  /// The hint, if one was given.
  std::optional<Millis> hint() const {
    return hint_ms_ >= 0 ? std::optional<Millis>(Millis(hint_ms_)) : std::nullopt;
  }
  double hint_ms() const noexcept { return hint_ms_; }

 private:
  retryrs_verdict kind_;
  double hint_ms_ = -1;
};

/// One event of a call, valid during the listener only (copy what you keep).
class Event {
 public:
  explicit Event(const retryrs_event &e) noexcept : e_(e) {}
  retryrs_event_kind kind() const noexcept { return e_.kind; }
  std::string_view name() const noexcept { return e_.name; }
  std::uint32_t attempt() const noexcept { return e_.attempt; }
  std::chrono::milliseconds elapsed() const noexcept {
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(e_.elapsed_ms));
  }
  /// The wait about to start (RETRYRS_EVENT_RETRYING only; zero otherwise).
  std::chrono::milliseconds delay() const noexcept {
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(e_.delay_ms));
  }
  retryrs_reason reason() const noexcept { return e_.reason; }
  /// The retries the attempt limit still allows (max_attempts - attempt).
  std::uint32_t retries_left() const noexcept { return e_.retries_left; }
  const retryrs_event &raw() const noexcept { return e_; }

 private:
  const retryrs_event &e_;
};

/// Receives every event of a call, on the calling thread.
using Listener = std::function<void(const Event &)>;

/// How a call ended: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED (reason says which
/// limit) or RETRYRS_CANCELLED.
struct Outcome {
  retryrs_status status = RETRYRS_OK;
  std::uint32_t attempts = 0;
  retryrs_reason reason = RETRYRS_REASON_NONE;
  bool ok() const noexcept { return status == RETRYRS_OK; }
};

/// A call of Retrier::run: its outcome and the last value the attempt returned (the
/// accepted one when ok(); empty if no attempt returned).
template <class T>
struct Result : Outcome {
  std::optional<T> value;
};

/// A retry budget shared by retriers (RAII over retryrs_budget).
class Budget {
 public:
#if RETRYRS_HPP_EXCEPTIONS
  /// See retryrs_budget_new(); throws Error on bad values.
  Budget(double max_tokens, double token_ratio) {
    retryrs_budget *raw = nullptr;
    detail::check(retryrs_budget_new(max_tokens, token_ratio, &raw));
    b_.reset(raw);
  }
#endif
  /// See retryrs_budget_new(); the error names the bad value.
  static Expected<Budget> make(double max_tokens, double token_ratio) {
    retryrs_budget *raw = nullptr;
    const retryrs_status status = retryrs_budget_new(max_tokens, token_ratio, &raw);
    return detail::expect<Budget>(status, [&] { return Budget(raw); });
  }
  double tokens() const {
    double t = 0;
    detail::check(retryrs_budget_tokens(b_.get(), &t));
    return t;
  }
  const retryrs_budget *get() const noexcept { return b_.get(); }

 private:
  explicit Budget(retryrs_budget *raw) noexcept : b_(raw) {}
  std::unique_ptr<retryrs_budget, detail::BudgetDelete> b_;
};

/// A cancel token; copies share it. Fire it from any thread: a call waiting with it wakes
/// at once and ends RETRYRS_CANCELLED. Sticky. Tokens link: child() and any() make a token
/// that its parents' cancel fires too (never the reverse).
class CancelToken {
 public:
  CancelToken() : t_(detail::new_cancel()) {}
  void cancel() const { detail::check(retryrs_cancel_fire(t_.get())); }
  bool cancelled() const {
    bool c = false;
    detail::check(retryrs_cancel_is_cancelled(t_.get(), &c));
    return c;
  }
  /// A token this one's cancel fires (at once if this one already fired); firing the
  /// child leaves this one alone.
  CancelToken child() const {
    retryrs_cancel *raw = nullptr;
    detail::check(retryrs_cancel_child(t_.get(), &raw));
    return CancelToken(raw);
  }
  /// A token fired as soon as any of `parents` is (a library's own token linked to its
  /// caller's).
  static CancelToken any(std::initializer_list<std::reference_wrapper<const CancelToken>> parents) {
    std::vector<const retryrs_cancel *> raw;
    for (const CancelToken &p : parents) raw.push_back(p.get());
    retryrs_cancel *out = nullptr;
    detail::check(retryrs_cancel_any(raw.data(), raw.size(), &out));
    return CancelToken(out);
  }
  const retryrs_cancel *get() const noexcept { return t_.get(); }

 private:
  explicit CancelToken(retryrs_cancel *raw) : t_(raw, detail::CancelDelete()) {}
  std::shared_ptr<retryrs_cancel> t_;
};

/// A failed attempt the engine would retry, as a hook sees it (valid during the hook).
struct RetryInfo {
  std::string_view name;
  std::uint32_t attempt;       ///< the attempt that failed (1-based)
  std::uint32_t retries_left;  ///< max_attempts - attempt
  std::chrono::milliseconds delay;  ///< the wait the engine computed
  std::optional<Millis> hint;       ///< the failure's Retry-After hint, if any
  std::chrono::milliseconds elapsed;
};

/// A wait hook: an exact wait to use instead of info.delay (not raised to the hint; the
/// deadline and max_retry_after still apply), or std::nullopt for the engine's.
using WaitHook = std::function<std::optional<Millis>(const RetryInfo &)>;
/// A before-retry hook: false stops the call (RETRYRS_EXHAUSTED, reason
/// RETRYRS_REASON_STOPPED); it runs before the wait hook.
using BeforeRetry = std::function<bool(const RetryInfo &)>;

/// Every knob of a retrier, from the contract's defaults; setters chain.
class Config {
 public:
  Config() { detail::check(retryrs_config_default(&c_)); }
  /// From a C config (e.g. one filled by retryrs_policies_get()); its name is copied.
  explicit Config(const retryrs_config &c) : c_(c), name_(c.name ? c.name : "") {
    has_name_ = c.name != nullptr;
  }

  Config &max_attempts(std::uint64_t n) {
    c_.max_attempts = n;
    return *this;
  }
  template <class Rep, class Period>
  Config &initial_delay(std::chrono::duration<Rep, Period> d) {
    c_.initial_delay_ms = detail::to_ms(d);
    return *this;
  }
  Config &multiplier(double m) {
    c_.multiplier = m;
    return *this;
  }
  template <class Rep, class Period>
  Config &max_delay(std::chrono::duration<Rep, Period> d) {
    c_.max_delay_ms = detail::to_ms(d);
    return *this;
  }
  /// RETRYRS_JITTER_*; `factor` for RETRYRS_JITTER_PROPORTIONAL.
  Config &jitter(retryrs_jitter kind, double factor = 0) {
    c_.jitter = kind;
    c_.jitter_factor = factor;
    return *this;
  }
  template <class Rep, class Period>
  Config &deadline(std::chrono::duration<Rep, Period> d) {
    c_.has_deadline = true;
    c_.deadline_ms = detail::to_ms(d);
    return *this;
  }
  Config &no_deadline() {
    c_.has_deadline = false;
    return *this;
  }
  Config &seed(std::uint64_t s) {
    c_.has_seed = true;
    c_.seed = s;
    return *this;
  }
  Config &name(std::string n) {
    name_ = std::move(n);
    has_name_ = true;
    return *this;
  }
  /// The retrier keeps its own reference: the Budget may go first.
  Config &budget(const Budget &b) {
    c_.budget = b.get();
    return *this;
  }
  template <class Rep, class Period>
  Config &max_retry_after(std::chrono::duration<Rep, Period> d) {
    c_.has_max_retry_after = true;
    c_.max_retry_after_ms = detail::to_ms(d);
    return *this;
  }
  Config &no_max_retry_after() {
    c_.has_max_retry_after = false;
    return *this;
  }

  /// The C config, its name pointing into this object.
  const retryrs_config &c() const noexcept {
    c_.name = has_name_ ? name_.c_str() : nullptr;
    return c_;
  }

 private:
  mutable retryrs_config c_{};
  std::string name_;
  bool has_name_ = false;
};

namespace detail {

/// What one call shares with its callbacks: the first exception a callback threw, and the
/// call's own cancel token, fired to stop the call when that happens.
struct CallContext {
  const retryrs_cancel *own = nullptr;
  const Listener *listener = nullptr;
  const WaitHook *wait = nullptr;
  const BeforeRetry *before_retry = nullptr;
#if RETRYRS_HPP_EXCEPTIONS
  std::exception_ptr error;

  bool failed() const noexcept { return static_cast<bool>(error); }
  void fail() noexcept {
    if (!error) error = std::current_exception();
    // Only a listener's exception needs the token (to cut the wait its RETRYING event
    // announced); the other callbacks stop the call by their answer.
    if (own) retryrs_cancel_fire(own);
  }
#else
  static constexpr bool failed() noexcept { return false; }
#endif
};

#if RETRYRS_HPP_EXCEPTIONS
/// The cancel tokens of this thread's calls that have a listener, one per nesting depth
/// (a callback may make a call of its own), each reused by the next call at its depth
/// until an exception fires it: such a call allocates nothing.
struct OwnTokens {
  std::vector<retryrs_cancel *> by_depth;
  std::size_t depth = 0;
  ~OwnTokens() {
    for (retryrs_cancel *t : by_depth) retryrs_cancel_free(t);
    gone() = true;
  }
  /// Set once this thread's pool is destroyed: a call made later, from a thread_local
  /// destructor, gets a token of its own. A plain bool outlives every destructor.
  static bool &gone() noexcept {
    thread_local bool g = false;
    return g;
  }
  static OwnTokens *get() {
    if (gone()) return nullptr;
    thread_local OwnTokens pool;
    return &pool;
  }
};

/// A call's own token: a child of the caller's token (made for the call), or this
/// thread's reusable one for the call's depth; a fired one is replaced, never reused.
class OwnToken {
 public:
  explicit OwnToken(const retryrs_cancel *caller) {
    if (caller) {
      check(retryrs_cancel_child(caller, &fresh_));
      token_ = fresh_;
      return;
    }
    pool_ = OwnTokens::get();
    if (!pool_) {
      check(retryrs_cancel_new(&fresh_));
      token_ = fresh_;
      return;
    }
    if (pool_->depth == pool_->by_depth.size()) pool_->by_depth.push_back(nullptr);
    retryrs_cancel *&slot = pool_->by_depth[pool_->depth];
    if (!slot) check(retryrs_cancel_new(&slot));
    pool_->depth++;
    token_ = slot;
  }
  ~OwnToken() {
    if (fresh_) {
      retryrs_cancel_free(fresh_);
      return;
    }
    retryrs_cancel *&slot = pool_->by_depth[--pool_->depth];
    bool fired = false;
    if (retryrs_cancel_is_cancelled(slot, &fired) != RETRYRS_OK || fired) {
      retryrs_cancel_free(slot);
      slot = nullptr;
    }
  }
  OwnToken(const OwnToken &) = delete;
  OwnToken &operator=(const OwnToken &) = delete;
  const retryrs_cancel *get() const noexcept { return token_; }

 private:
  OwnTokens *pool_ = nullptr;
  retryrs_cancel *fresh_ = nullptr;
  const retryrs_cancel *token_ = nullptr;
};
#endif

template <class Attempt>
struct AttemptBox {
  CallContext *ctx;
  Attempt *attempt;
};

template <class Attempt>
Verdict invoke_attempt(Attempt &attempt, std::uint32_t n) {
  if constexpr (std::is_invocable_v<Attempt &, std::uint32_t>) {
    return attempt(n);
  } else {
    return attempt();
  }
}

template <class Box>
retryrs_verdict attempt_trampoline(void *user_data, std::uint32_t n, double *hint_ms) noexcept {
  Box *box = static_cast<Box *>(user_data);
  if (box->ctx->failed()) return RETRYRS_PERMANENT;
#if RETRYRS_HPP_EXCEPTIONS
  try {
#endif
    const Verdict v = invoke_attempt(*box->attempt, n);
    if (v.kind() == RETRYRS_TRANSIENT && v.hint_ms() >= 0) *hint_ms = v.hint_ms();
    return v.kind();
#if RETRYRS_HPP_EXCEPTIONS
  } catch (...) {
    box->ctx->fail();
    return RETRYRS_PERMANENT;
  }
#endif
}

inline void listener_trampoline(void *user_data, const retryrs_event *e) noexcept {
  CallContext *ctx = static_cast<CallContext *>(user_data);
  if (ctx->failed()) return;
#if RETRYRS_HPP_EXCEPTIONS
  try {
#endif
    (*ctx->listener)(Event(*e));
#if RETRYRS_HPP_EXCEPTIONS
  } catch (...) {
    ctx->fail();
  }
#endif
}

inline RetryInfo retry_info(const retryrs_retry_info &i) {
  RetryInfo r{i.name,
              i.attempt,
              i.retries_left,
              std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(i.delay_ms)),
              std::nullopt,
              std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(i.elapsed_ms))};
  if (i.hint_ms >= 0) r.hint = Millis(i.hint_ms);
  return r;
}

inline retryrs_plan before_retry_trampoline(void *user_data, const retryrs_retry_info *info) noexcept {
  CallContext *ctx = static_cast<CallContext *>(user_data);
  if (ctx->failed()) return RETRYRS_PLAN_STOP;
#if RETRYRS_HPP_EXCEPTIONS
  try {
#endif
    return (*ctx->before_retry)(retry_info(*info)) ? RETRYRS_PLAN_ENGINE : RETRYRS_PLAN_STOP;
#if RETRYRS_HPP_EXCEPTIONS
  } catch (...) {
    ctx->fail();
    return RETRYRS_PLAN_STOP;
  }
#endif
}

inline double wait_trampoline(void *user_data, const retryrs_retry_info *info) noexcept {
  CallContext *ctx = static_cast<CallContext *>(user_data);
  if (ctx->failed()) return 0;
#if RETRYRS_HPP_EXCEPTIONS
  try {
#endif
    const std::optional<Millis> wait = (*ctx->wait)(retry_info(*info));
    // A negative wait would read as "the engine's": clamp a negative answer to 0.
    return wait ? std::max(wait->count(), 0.0) : -1;
#if RETRYRS_HPP_EXCEPTIONS
  } catch (...) {
    // No wait: the next attempt is answered PERMANENT at once (the call has failed).
    ctx->fail();
    return 0;
  }
#endif
}

}  // namespace detail

class Policies;

/// A retrier (RAII over retryrs_retrier): immutable, shareable between threads.
class Retrier {
 public:
#if RETRYRS_HPP_EXCEPTIONS
  /// Validates the config; throws Error naming the field otherwise.
  explicit Retrier(const Config &config) {
    retryrs_retrier *raw = nullptr;
    detail::check(retryrs_retrier_new(&config.c(), &raw));
    r_.reset(raw);
  }
#endif
  /// Validates the config; the error names the field.
  static Expected<Retrier> make(const Config &config) {
    retryrs_retrier *raw = nullptr;
    const retryrs_status status = retryrs_retrier_new(&config.c(), &raw);
    return detail::expect<Retrier>(status, [&] { return Retrier(raw); });
  }

  /// Runs `attempt` (a callable taking the 1-based attempt number, or nothing, and
  /// returning a Verdict) until it succeeds or the engine stops it. `listener` and
  /// `cancel` are optional. A C++ exception from a callback is rethrown after the call.
  /// Without exceptions, a status other than the call's outcomes (INVALID_ARGUMENT,
  /// INTERNAL_ERROR) is returned in the Outcome too.
  template <class Attempt>
  Outcome call(Attempt &&attempt, const Listener &listener = {}, const CancelToken *cancel = nullptr) const {
    using Fn = std::remove_reference_t<Attempt>;
    detail::CallContext ctx;
    const retryrs_cancel *token = cancel ? cancel->get() : nullptr;
#if RETRYRS_HPP_EXCEPTIONS
    // With a listener, the call's own token: what a listener's exception fires to cut the
    // wait its RETRYING event announced, without cancelling the caller's other calls (a
    // child of the caller's token, so that firing the caller's fires it too).
    std::optional<detail::OwnToken> own;
    if (listener) {
      own.emplace(token);
      token = ctx.own = own->get();
    }
#endif
    ctx.listener = &listener;
    ctx.wait = &wait_;
    ctx.before_retry = &before_retry_;
    detail::AttemptBox<Fn> box{&ctx, &attempt};
    const retryrs_listener l{detail::listener_trampoline, &ctx};
    const retryrs_hooks hooks{sizeof(retryrs_hooks), wait_ ? &detail::wait_trampoline : nullptr,
                              before_retry_ ? &detail::before_retry_trampoline : nullptr, &ctx};
    retryrs_outcome out{};
    const retryrs_status status =
        retryrs_retrier_call_hooked(r_.get(), &detail::attempt_trampoline<detail::AttemptBox<Fn>>, &box,
                                    listener ? &l : nullptr, token, wait_ || before_retry_ ? &hooks : nullptr, &out);
#if RETRYRS_HPP_EXCEPTIONS
    if (ctx.error) std::rethrow_exception(ctx.error);
    if (status == RETRYRS_INVALID_ARGUMENT || status == RETRYRS_INTERNAL_ERROR) {
      throw Error(status, retryrs_last_error());
    }
#endif
    Outcome outcome;
    outcome.status = status;
    outcome.attempts = out.attempts;
    outcome.reason = out.reason;
    return outcome;
  }

  /// Runs `attempt` (returning a value) and asks `accept` (a predicate taking the value,
  /// returning a Verdict) whether the value will do: a transient verdict retries, with
  /// the hint it carries. The result holds the outcome and the last value.
  template <class Attempt, class Accept>
  auto run(Attempt &&attempt, Accept &&accept, const Listener &listener = {}, const CancelToken *cancel = nullptr) const {
    using T = std::decay_t<decltype(detail_value(attempt, 1u))>;
    Result<T> result;
    auto one = [&](std::uint32_t n) -> Verdict {
      result.value.reset();
      result.value.emplace(detail_value(attempt, n));
      return accept(std::as_const(*result.value));
    };
    static_cast<Outcome &>(result) = call(one, listener, cancel);
    return result;
  }

  /// Sets the wait hook of every call made with this retrier (set it before sharing the
  /// retrier between threads): an exact wait, or std::nullopt for the engine's.
  Retrier &wait_with(WaitHook hook) {
    wait_ = std::move(hook);
    return *this;
  }
  /// Sets the before-retry hook of every call (before sharing the retrier): false stops
  /// the call, which ends RETRYRS_EXHAUSTED with reason RETRYRS_REASON_STOPPED.
  Retrier &before_retry(BeforeRetry hook) {
    before_retry_ = std::move(hook);
    return *this;
  }
  /// What this retrier's calls did so far (retryrs_retrier_stats()).
  retryrs_stats stats() const {
    retryrs_stats s{};
    detail::check(retryrs_retrier_stats_get(r_.get(), &s));
    return s;
  }

  const retryrs_retrier *get() const noexcept { return r_.get(); }

 private:
  friend class Policies;
  explicit Retrier(retryrs_retrier *raw) noexcept : r_(raw) {}

  template <class Attempt>
  static decltype(auto) detail_value(Attempt &attempt, std::uint32_t n) {
    if constexpr (std::is_invocable_v<Attempt &, std::uint32_t>) {
      return attempt(n);
    } else {
      return attempt();
    }
  }

  std::unique_ptr<retryrs_retrier, detail::RetrierDelete> r_;
  WaitHook wait_;
  BeforeRetry before_retry_;
};

/// A loaded policy document (RAII over retryrs_policies).
class Policies {
 public:
#if RETRYRS_HPP_EXCEPTIONS
  /// Throws Error saying where and what when the document is invalid.
  static Policies from_json(std::string_view json) {
    retryrs_policies *raw = nullptr;
    detail::check(retryrs_policies_from_json(json.data(), json.size(), &raw));
    return Policies(raw);
  }
#endif
  /// The document, or the error saying where and what is wrong with it.
  static Expected<Policies> parse(std::string_view json) {
    retryrs_policies *raw = nullptr;
    const retryrs_status status = retryrs_policies_from_json(json.data(), json.size(), &raw);
    return detail::expect<Policies>(status, [&] { return Policies(raw); });
  }
  std::size_t size() const noexcept { return retryrs_policies_count(p_.get()); }
  /// The names, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); i++) out.emplace_back(retryrs_policies_name(p_.get(), i));
    return out;
  }
  /// The policy's config (its budget, if any, stays this document's: build retriers
  /// from it while the document lives).
  /// The named policy's config, or the error naming the names there are.
  Expected<Config> find(const std::string &name) const {
    retryrs_config c;
    const retryrs_status status = retryrs_policies_get(p_.get(), name.c_str(), &c);
    return detail::expect<Config>(status, [&] { return Config(c); });
  }
  /// A retrier for the named policy, or the error.
  Expected<Retrier> make_retrier(const std::string &name) const {
    Expected<Config> c = find(name);
    if (!c) return Expected<Retrier>(c.status(), c.message());
    return Retrier::make(*c);
  }
#if RETRYRS_HPP_EXCEPTIONS
  Config config(const std::string &name) const {
    retryrs_config c;
    detail::check(retryrs_policies_get(p_.get(), name.c_str(), &c));
    return Config(c);
  }
  /// A retrier for the named policy; throws Error naming the names there are.
  Retrier retrier(const std::string &name) const { return Retrier(config(name)); }
#endif

 private:
  explicit Policies(retryrs_policies *raw) noexcept : p_(raw) {}
  std::unique_ptr<retryrs_policies, detail::PoliciesDelete> p_;
};

}  // namespace retryrs

#endif  // C++17
#endif  // RETRYRS_HPP
