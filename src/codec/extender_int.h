/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender_int.h - what the files of the extender codec share, included by
 * them only (never by another module): the scanner helpers every request
 * decoder uses, the envelope ExtenderArgs and ExtenderPreemptionArgs share,
 * and the one escaping rule for the text the scheduler shows users.
 *
 *   extender.c          the shared helpers below, and the HTTP error body
 *   extender_args.c     ExtenderArgs (Pod + Nodes or NodeNames)
 *   extender_filter.c   ExtenderFilterResult, HostPriorityList
 *   extender_bind.c     ExtenderBindingArgs / ExtenderBindingResult
 *   extender_preempt.c  ExtenderPreemptionArgs / ExtenderPreemptionResult
 *
 * The message files call extender.c, never each other (scripts/layers.py
 * fails a circle).
 */
#ifndef GX_EXTENDER_INT_H
#define GX_EXTENDER_INT_H

#include "extender.h"
#include "json.h"

/* ---- decoding: the gx_json scanner on a request body ---- */

/* Record an out-of-memory reason and return GX_ENOMEM (inline: callers' analysis sees it). */
static inline enum gx_err
ext_nomem(struct gx_why *why)
{
    gx_why_set(why, "out of memory decoding the request");
    return GX_ENOMEM;
}

/*
 * The value at the cursor has the wrong type and the caller has already put
 * the reason in why: GX_EINVAL, unless the value is not even valid JSON
 * (then GX_EPARSE from the scanner, whose offset says more).
 */
enum gx_err ext_wrong_type(struct gx_json *j) GX_WUR;

/*
 * Enter the top-level object of a request (@what: "ExtenderArgs", for the
 * message). A body that is valid JSON but not an object is GX_EINVAL;
 * anything else malformed is GX_EPARSE.
 */
enum gx_err ext_enter_top(struct gx_json *j, const char *what, struct gx_why *why) GX_WUR;

/* GX_EPARSE unless only whitespace follows the top-level value. */
enum gx_err ext_expect_end(struct gx_json *j, struct gx_why *why) GX_WUR;

/*
 * The shape ExtenderArgs and ExtenderPreemptionArgs share: a top-level
 * object with a required "Pod" and exactly one of two members non-null
 * (@names), each decoded by @member; other members are skipped, and of a
 * repeated key the last one wins.
 */
struct ext_envelope {
    const char *what;     /* "ExtenderArgs", for the type error */
    const char *names[2]; /* the two alternatives */
    /* Decode the non-null value of names[@which] at the cursor, replacing an earlier one. */
    enum gx_err (*member)(struct gx_json *j, void *ctx, int which, struct gx_why *why);
    void *ctx;
};

/*
 * Walk @body as @e says, then decode its Pod into @a and @pod; *which is
 * the member that is set.
 */
enum gx_err ext_envelope(const char *body, size_t len, int max_depth, const struct ext_envelope *e,
                         struct gx_arena *a, struct gx_pod *pod, int *which,
                         struct gx_why *why) GX_WUR;

/* Copy @n elements of @size bytes at @src into *@dst in @a (NULL when n is 0). */
enum gx_err ext_to_arena(struct gx_arena *a, const void *src, size_t n, size_t size, void **dst,
                         struct gx_why *why) GX_WUR;

/* ---- encoding ---- */

/* Append text we author as a JSON string, each '%' written as " percent". */
enum gx_err ext_add_text(struct gx_buf *b, const char *s) GX_WUR;

/* Undo a failed encode: drop what was appended after @mark. */
void ext_truncate(struct gx_buf *b, size_t mark);

#endif
