/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h - what the files of the config module share and nobody else
 * sees: the key table's row type and the table itself (config_keys.c), the
 * storage of one row (config_field.c), the JSON reader (config_read.c) and
 * the cross-key checks (config_check.c). Included only by src/codec/config*.c.
 *
 * Every row describes one key: its dotted path, its type, where it lives in
 * struct gx_config (or, for array-of-object keys such as score.label_rules,
 * in the element struct: rows "<array>[].<key>"), its range, its default and
 * whether changing it needs a restart.
 */
#ifndef GX_CONFIG_INT_H
#define GX_CONFIG_INT_H

#include "config.h"

struct cJSON;

/* Longest dotted path built while walking ("score.label_rules[12].values[3]"). */
#define GX_CONFIG_PATH_MAX 192
/* The element rows of an array-of-objects key live under this path suffix. */
#define GX_CONFIG_ELEM_SUFFIX "[]"
/* Most elements any list or map key accepts (keeps lookups and checks cheap). */
#define GX_CONFIG_LIST_MAX 1024
/* What a GX_KF_METRIC_NAME string must match (checked in config_read.c, stated in the schema). */
#define GX_CONFIG_METRIC_NAME_RE "^[a-zA-Z_:][a-zA-Z0-9_:]*$"

/** What a row's field holds, and so how it is parsed, defaulted, compared and freed. */
enum gx_ktype {
    GX_K_STR,      /* char *; GX_KF_NULLABLE allows null, GX_KF_PATH resolves against base_dir */
    GX_K_INT,      /* int */
    GX_K_SIZE,     /* size_t */
    GX_K_I64,      /* int64_t */
    GX_K_DOUBLE,   /* double */
    GX_K_BOOL,     /* bool */
    GX_K_ENUM,     /* an enum stored as int; names[] index = value */
    GX_K_STR_LIST, /* char **, count at off_n */
    GX_K_INT_LIST, /* int *, count at off_n; elements within min..max */
    GX_K_SLOTS,    /* object product -> slots (struct gx_product_slots[]) */
    GX_K_RULES,    /* array of objects (struct gx_label_rule[]) */
};

/** Row flags (struct gx_kspec.flags). */
enum {
    GX_KF_RESTART = 1u << 0,     /* a change needs a restart */
    GX_KF_NULLABLE = 1u << 1,    /* GX_K_STR: null accepted, default may be NULL */
    GX_KF_PATH = 1u << 2,        /* GX_K_STR/GX_K_STR_LIST: a file path, resolved on base_dir */
    GX_KF_NONEMPTY = 1u << 3,    /* GX_K_STR: not ""; GX_K_STR_LIST: at least one element */
    GX_KF_REQUIRED = 1u << 4,    /* element key that must be present */
    GX_KF_METRIC_NAME = 1u << 5, /* GX_K_STR: a Prometheus metric name */
    GX_KF_DEPRECATED = 1u << 6,  /* still parsed (old files load), read by nothing: warned */
};

/** One row of the key table. */
struct gx_kspec {
    const char *path; /* dotted; element rows are "<array>[].<key>" */
    enum gx_ktype type;
    unsigned flags;           /* GX_KF_* */
    size_t off;               /* field offset in struct gx_config (or the element struct) */
    size_t off_n;             /* count offset for lists */
    double min, max;          /* numeric range (inclusive), also for list elements */
    double def;               /* numeric/bool default */
    const char *defs;         /* string default */
    const char *const *names; /* GX_K_ENUM names; GX_K_STR_LIST default (NULL-terminated) */
};

/* config_keys.c: the table and the lookups over it */

/** Every key, in the order of docs/configuration.md; gx_config_n_rows rows. */
extern const struct gx_kspec gx_config_table[];
/** Number of rows in gx_config_table. */
extern const size_t gx_config_n_rows;
/** Names of enum gx_rule_op, NULL-terminated ("In", "NotIn", ...). */
extern const char *const gx_config_op_names[];

/** Address of the field @k describes inside @base (a config or an element struct). */
void *gx_config_field(void *base, const struct gx_kspec *k);

/** Read-only twin of gx_config_field(). */
const void *gx_config_cfield(const void *base, const struct gx_kspec *k);

/** Address of the element count of list row @k inside @base. */
size_t *gx_config_count_field(void *base, const struct gx_kspec *k);

/** The element count of list row @k inside a read-only @base. */
size_t gx_config_ccount(const void *base, const struct gx_kspec *k);

/** True for rows of array elements ("a.b[].c"); they are not fields of struct gx_config. */
bool gx_config_is_elem_row(const struct gx_kspec *k);

/** True if @path starts with @prefix (of length @plen) followed by '.': below @prefix. */
bool gx_config_path_below(const char *path, const char *prefix, size_t plen);

/**
 * True if row @k is a field of the struct at @prefix (length @plen): with
 * @prefix NULL the rows of struct gx_config, else the element rows
 * "<prefix>.<key>".
 */
bool gx_config_row_owned_by(const struct gx_kspec *k, const char *prefix, size_t plen);

/** The row whose path is exactly @path, or NULL. */
const struct gx_kspec *gx_config_find_row(const char *path);

/** True if some row lies below @path, i.e. @path names a section. */
bool gx_config_is_section(const char *path);

/**
 * The table path of the elements of array row @k ("score.label_rules[]")
 * into @out (size @n); a path longer than @out is cut.
 */
void gx_config_elem_path(const struct gx_kspec *k, char *out, size_t n);

/* config_field.c: the storage of one row */

/** Heap copy of @s; NULL on ENOMEM. */
char *gx_config_dup_str(const char *s);

/** Free @n strings and the array holding them; NULL is a no-op. */
void gx_config_free_str_list(char **list, size_t n);

/** Free @n product entries and the array holding them; NULL is a no-op. */
void gx_config_free_slots(struct gx_product_slots *list, size_t n);

/**
 * Heap copies of the @n strings of @src into *out (NULL when @n is 0).
 * GX_ENOMEM, with nothing written.
 */
enum gx_err gx_config_dup_str_list(const char *const *src, size_t n, char ***out) GX_WUR;

/** Release what row @k owns inside @base and reset it to empty. Can't fail. */
void gx_config_release_field(void *base, const struct gx_kspec *k);

/**
 * Release every row directly owned by @base: with @prefix NULL the rows of
 * struct gx_config, else the element rows "<prefix>.<key>". Can't fail.
 */
void gx_config_release_rows(void *base, const char *prefix);

/**
 * Set the defaults of the rows gx_config_release_rows(@base, @prefix) would
 * release. GX_ENOMEM; what was set is released by gx_config_release_rows.
 */
enum gx_err gx_config_apply_defaults(void *base, const char *prefix) GX_WUR;

/* config_read.c: the JSON reader */

/**
 * Walk the top-level object @root against the table into @cfg (which holds
 * the defaults): every member must be a key or a section, each value is
 * checked for its key's type and range. Relative paths resolve against
 * cfg->base_dir. @nul_marked: the text had its \u0000 escapes rewritten
 * (gx_json_mark_nul_escapes), and a string holding one is refused.
 * GX_EINVAL with @why naming the key, or GX_ENOMEM; @cfg is then partly
 * filled and still freed with gx_config_free.
 */
enum gx_err gx_config_read(const struct cJSON *root, struct gx_config *cfg, bool nul_marked,
                           struct gx_why *why) GX_WUR;

/* config_check.c: the rules that tie several keys together */

/** Check the rules across keys of a walked @cfg; GX_EINVAL with @why naming the key. */
enum gx_err gx_config_check(const struct gx_config *cfg, struct gx_why *why) GX_WUR;

/* config_selector.c: GX_EINVAL with "@key: ..." when @sel (NULL: none) is no label selector */
enum gx_err gx_config_check_selector(const char *key, const char *sel, struct gx_why *why) GX_WUR;

#endif
