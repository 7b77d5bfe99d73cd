/* A retryrs 0.1 program that filled its config with 0.1's retryrs_config_default(): that
 * function wrote 0.1's 96-byte layout, and today's config is larger, so the symbol is
 * gone (today's header makes retryrs_config_default a macro over retryrs_config_init,
 * which is told the caller's size). Linking this program against today's library must
 * fail, naming the symbol: an old binary is stopped by the loader instead of having its
 * stack overwritten. tests/c/abi.sh checks that the link fails for that reason. */
#include <stdint.h>

typedef int32_t retryrs_status;
struct retryrs_config_v01 {
  uint64_t max_attempts;
  double rest[11];
};
retryrs_status retryrs_config_default(struct retryrs_config_v01 *config);

int main(void) {
  struct retryrs_config_v01 c;
  return retryrs_config_default(&c) == 0 ? 0 : 1;
}
