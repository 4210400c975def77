/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm.h - maps dcgm-exporter series to (node, card, signal) samples, and
 * keeps the latest value of every signal of every card (the metric store)
 * from which snapshots are built. Node from the first present label of
 * cfg->node_labels (optionally with ":port" stripped), card from "UUID"
 * (or "uuid") with "gpu" as the index, workload from exported_pod/pod.
 * A signal refreshed from a source replaces that source's previous values
 * for it: a series that disappeared becomes unknown, never zero. No I/O.
 */
#ifndef GX_DCGM_H
#define GX_DCGM_H

#include "config.h"
#include "series.h"

struct gx_card_sample {
    const char *node; /* borrowed from the series */
    size_t node_len;
    const char *uuid; /* NULL if the series has none */
    int gpu;          /* -1 if unknown */
    enum gx_signal sig;
    double value;
    int64_t at_ms;
    const char *pod; /* "namespace/name" is not built; the pod label value or NULL */
};

/** Signal whose configured family name is @name; false if none. */
bool gx_dcgm_signal_of(const struct gx_config *cfg, const char *name, enum gx_signal *out);

/**
 * Map one series of signal @sig to a card sample (at_ms = series ts or
 * @default_at_ms). False when the series names no node or no card.
 */
bool gx_dcgm_map(const struct gx_config *cfg, enum gx_signal sig, const struct gx_series *s,
                 int64_t default_at_ms, struct gx_card_sample *out);

/** Latest value and time of one signal of one card. */
struct gx_card_value {
    double value;  /* NaN = unknown */
    int64_t at_ms; /* 0 = never seen */
};

/** What the store knows about one card. */
struct gx_mcard {
    char *uuid;       /* may be NULL */
    int gpu;          /* -1 unknown */
    char *pod;        /* workload pod label, may be NULL */
    char *pci_bus_id; /* "pci_bus_id" label of a page's series (gx_mstore_load_page), or NULL */
    struct gx_card_value v[GX_SIG_COUNT];
};

struct gx_mstore;

/** A new empty store; NULL on ENOMEM. Free with gx_mstore_free. */
struct gx_mstore *gx_mstore_new(void);

/** Free a store; NULL is a no-op. */
void gx_mstore_free(struct gx_mstore *ms);

/**
 * Begin replacing @sig from source @source (an index, e.g. one per file or
 * 0 for Prometheus): values of @sig that this source set are forgotten
 * when gx_mstore_commit is called unless put again in between.
 */
void gx_mstore_begin(struct gx_mstore *ms, int source, enum gx_signal sig);

/**
 * Record a sample for the signal being replaced (tagged with the source of
 * the latest open gx_mstore_begin for s->sig). GX_ENOMEM, or GX_EINVAL when
 * no replacement of s->sig is open.
 */
enum gx_err gx_mstore_put(struct gx_mstore *ms, const struct gx_card_sample *s) GX_WUR;

/**
 * Finish every replacement begun by gx_mstore_begin since the last commit:
 * their values not put in between become unknown (NaN, at_ms 0), and cards
 * left with no known value are dropped.
 */
void gx_mstore_commit(struct gx_mstore *ms);

/**
 * Cards known for @node (array of *n, borrowed until the next change of
 * the store), or NULL with *n = 0.
 */
const struct gx_mcard *gx_mstore_cards(const struct gx_mstore *ms, const char *node, size_t *n);

/**
 * Parse a whole dcgm-exporter page from file source @source and replace all
 * signals it carries (begin/put/commit for each configured signal, so a
 * family missing from the page becomes unknown). Series of families not
 * mapped to a signal are skipped. A page that fails to parse changes
 * nothing (GX_EPARSE, "line N: reason" in @why).
 */
enum gx_err gx_mstore_load_page(struct gx_mstore *ms, const struct gx_config *cfg, int source,
                                const char *text, size_t len, int64_t now_ms,
                                struct gx_why *why) GX_WUR;

/*
 * A page parsed in pieces, so a page of hundreds of MiB never sits in
 * memory whole: feed it (the caller reads), then apply it like
 * gx_mstore_load_page; a page that fails anywhere changes nothing.
 */
struct gx_page;

/** New empty page for @cfg sampled at @now_ms; NULL on ENOMEM. */
struct gx_page *gx_page_new(const struct gx_config *cfg, int64_t now_ms);

/**
 * Parse the complete lines at the start of @buf[0..len) (all of it when
 * @last); *@used = bytes consumed, the rest must be fed again with more.
 * A gx_chunk_cb. GX_EPARSE with @why.
 */
enum gx_err gx_page_feed(struct gx_page *pg, const char *buf, size_t len, bool last, size_t *used,
                         struct gx_why *why) GX_WUR;

/** Replace every configured signal of @source in @ms with the page's samples. */
enum gx_err gx_page_apply(struct gx_page *pg, struct gx_mstore *ms, int source,
                          struct gx_why *why) GX_WUR;

/** Free; NULL is a no-op. */
void gx_page_free(struct gx_page *pg);

#endif
