/* SPDX-License-Identifier: Apache-2.0 */
/* elect.c - the leader Lease's rule (see elect.h). Pure. */
#include "elect.h"

#include <stdio.h>
#include <string.h>

void
gx_elect_init(struct gx_elect *e)
{
    memset(e, 0, sizeof(*e));
}

/* Remember the Lease as seen now; its age counts from its last change. */
static void
seen(struct gx_elect *e, const char *rv, const char *holder, int64_t now_ms)
{
    if (strcmp(e->rv, rv) != 0 || strcmp(e->holder, holder) != 0 || e->changed_ms == 0) {
        (void)snprintf(e->rv, sizeof(e->rv), "%s", rv);
        (void)snprintf(e->holder, sizeof(e->holder), "%s", holder);
        e->changed_ms = now_ms;
    }
}

static bool
quiet(const struct gx_elect *e, int64_t now_ms, int64_t lease_ms)
{
    return now_ms - e->changed_ms >= lease_ms;
}

enum gx_elect_act
gx_elect_observe(struct gx_elect *e, const char *self, const char *rv, const char *holder,
                 int64_t now_ms, int64_t lease_ms)
{
    seen(e, rv, holder, now_ms);
    if (rv[0] == '\0' || holder[0] == '\0') {
        return GX_ELECT_TAKE;
    }
    if (strcmp(holder, self) == 0) {
        return GX_ELECT_RENEW;
    }
    return quiet(e, now_ms, lease_ms) ? GX_ELECT_TAKE : GX_ELECT_FOLLOW;
}

void
gx_elect_written(struct gx_elect *e, const char *self, const char *rv, int64_t now_ms)
{
    seen(e, rv, self, now_ms);
    e->written_ms = now_ms;
}

bool
gx_elect_leading(const struct gx_elect *e, const char *self, int64_t now_ms, int64_t lease_ms)
{
    return e->written_ms > 0 && strcmp(e->holder, self) == 0 && now_ms - e->written_ms < lease_ms;
}

const char *
gx_elect_leader(const struct gx_elect *e, const char *self, int64_t now_ms, int64_t lease_ms)
{
    if (e->holder[0] == '\0' || strcmp(e->holder, self) == 0 || quiet(e, now_ms, lease_ms)) {
        return NULL;
    }
    return e->holder;
}
