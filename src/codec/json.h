/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - a small validating JSON scanner for hot paths where building a
 * cJSON tree would cost too much (ExtenderArgs with thousands of nodes):
 * skip a value and know where it ended, walk object members and array
 * elements, decode a string. It never allocates except in gx_json_string.
 * Strict RFC 8259 syntax, nesting capped by @max_depth.
 *
 * Which parser reads which document:
 *   this scanner   ExtenderArgs and the bind/preempt args (extender_*.c),
 *                  Prometheus query answers (prom.c): large, hot, never a
 *                  whole tree; and every Kubernetes document (kobj.c): one
 *                  walk validates it and builds, item by item, the cJSON tree
 *                  of a Pod, a Node, a list item, a watch event, a Lease, a
 *                  Status that kobj's field readers look into;
 *   cJSON's parser the config file (config.c) and the Lease ledger
 *                  annotation (ledger_codec.c).
 * Repeated keys: in documents from peers (all of them written by Go) the
 * last one wins, as with Go's decoders, whichever parser reads them; the
 * operator's config and the extender's own Lease annotation reject a
 * duplicate as an error (a typo or corruption, not a peer's choice).
 */
#ifndef GX_JSON_H
#define GX_JSON_H

#include "arena.h"
#include "common.h"

struct gx_json {
    const char *p; /* input */
    size_t len;
    size_t pos; /* cursor */
    int max_depth;
    struct gx_why *why; /* may be NULL */
    int depth;          /* containers entered with gx_json_enter_* and not yet closed */
    bool first;         /* just entered: the next member/element has no leading ',' */
};

/** Start scanning @len bytes of @p. */
void gx_json_init(struct gx_json *j, const char *p, size_t len, int max_depth, struct gx_why *why);

/** Skip whitespace; return the next byte without consuming it, or 0 at end. */
char gx_json_peek(struct gx_json *j);

/** Skip one complete value (validating it); GX_EPARSE or GX_ETOOBIG (depth). */
enum gx_err gx_json_skip(struct gx_json *j) GX_WUR;

/** Expect '{'. Then call gx_json_next_member until it returns false. */
enum gx_err gx_json_enter_object(struct gx_json *j) GX_WUR;

/**
 * Advance to the next member of the current object: on true, *key and *klen are
 * the raw (still escaped) key and the cursor is at its value, which the
 * caller must consume (scan or skip). False at '}' (consumed) or on error
 * (then *rc is set).
 */
bool gx_json_next_member(struct gx_json *j, const char **key, size_t *klen, enum gx_err *rc);

/** Expect '['. Then call gx_json_next_element until it returns false. */
enum gx_err gx_json_enter_array(struct gx_json *j) GX_WUR;

/** True with the cursor at the next element; false at ']' (consumed) or error (*rc). */
bool gx_json_next_element(struct gx_json *j, enum gx_err *rc);

/**
 * gx_json_next_element and gx_json_string_raw in one step, for arrays of
 * strings: true with the raw span of the next element (as
 * gx_json_string_raw gives it) and the cursor after it. False at ']'
 * (consumed; *rc = GX_OK), on malformed input (*rc = GX_EPARSE, reason in
 * why) or when the next element is not a string (*rc = GX_EINVAL, cursor at
 * that element, nothing recorded in why: the caller names the field).
 */
bool gx_json_next_string(struct gx_json *j, const char **raw, size_t *rawlen, bool *has_esc,
                         enum gx_err *rc);

/** Consume "null" if it is next; true if it was. */
bool gx_json_take_null(struct gx_json *j);

/**
 * Decode a string value (escapes, \u surrogate pairs) into arena memory:
 * *out is NUL-terminated (a decoded \u0000 ends it early for C-string
 * users; *outlen counts every byte). A lone surrogate becomes U+FFFD; bytes
 * of invalid UTF-8 are passed through as they are. GX_EPARSE when the next
 * value is not a valid string, GX_ENOMEM.
 */
enum gx_err gx_json_string(struct gx_json *j, struct gx_arena *a, const char **out,
                           size_t *outlen) GX_WUR;

/**
 * Scan the string value at the cursor without decoding or allocating:
 * *raw / *rawlen are the bytes between the quotes (still escaped, borrowed
 * from the input) and *has_esc tells whether they hold a '\\' (when false
 * they are the decoded string). The cursor moves past the string.
 * GX_EPARSE when the next value is not a valid string.
 */
enum gx_err gx_json_string_raw(struct gx_json *j, const char **raw, size_t *rawlen,
                               bool *has_esc) GX_WUR;

/**
 * Decode @rawlen bytes of a raw string (from gx_json_string_raw or a key)
 * into @dst, which must have room for @rawlen + 1 bytes: decoding never
 * grows a string. Escapes are handled as in gx_json_string; @dst is
 * NUL-terminated and the decoded length is returned. Cannot fail.
 */
size_t gx_json_unescape(const char *raw, size_t rawlen, char *dst);

/**
 * Rewrite, in place, every \u0000 escape inside the strings of the JSON
 * text @text (@len bytes) into \uFFFF, so that a parser that keeps
 * NUL-terminated strings (cJSON) cannot silently cut a string there: the
 * caller rejects strings holding U+FFFF (EF BF BF) once this returned > 0.
 * Escaped backslashes are honoured ("\\u0000" is not an escape). Returns
 * how many escapes were rewritten. Cannot fail.
 */
size_t gx_json_mark_nul_escapes(char *text, size_t len);

/**
 * ASCII case-insensitive compare of a raw key with @name, as Go's
 * encoding/json matches struct fields. A key with escapes is decoded first,
 * so "\u0050od" matches "Pod"; non-ASCII bytes must match exactly.
 */
bool gx_json_key_is(const char *key, size_t klen, const char *name);

#endif
