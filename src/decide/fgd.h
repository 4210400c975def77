/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fgd.h - fragmentation of GPU nodes as the FGD paper defines it (Weng et
 * al., USENIX ATC 2023): the GPU capacity of a node that a typical pod of
 * the workload could not use, in milli-GPU, as an expectation over the
 * typical pods. The typical pods are learned from the requests seen: a
 * bounded table of request shapes with exponentially decaying weights.
 * Used by the fgd policy (prioritize and the card choice at bind) and by
 * the simulator's fragmentation rate. Pure, no I/O.
 */
#ifndef GX_FGD_H
#define GX_FGD_H

#include "common.h"

/**
 * Shapes the model keeps; the lightest is forgotten when a new one arrives.
 * Room for a production workload's distinct requests (the openb trace has
 * 151 CPU/memory/GPU shapes): with 64 the table kept forgetting live shapes
 * and lost 0.4 points of GPU allocation (docs/scheduling-quality.md).
 */
#define GX_FGD_MAX_SHAPES 256
/** Milli-GPU of one card. */
#define GX_FGD_CARD 1000
/** Cards of one node the fragmentation looks at. */
#define GX_FGD_MAX_CARDS 16
/**
 * Classes of nodes a typical pod may run on (a pod pinned to GPU models by
 * node affinity is a typical pod only there). Class 0 is "any node"; a
 * workload pins itself a few ways, not thirty.
 */
#define GX_FGD_MAX_WHERE 32
/** Room for one class's rule: a where key (where.h). */
#define GX_FGD_WHERE_LEN 256

/** A pod's request: CPU, memory and its GPU demand. */
struct gx_fgd_shape {
    int64_t cpu_milli;
    int64_t mem_mib;
    int gpus;  /* whole cards; 1 with milli < 1000 is a share */
    int milli; /* share of one card, 1000 for whole cards */
    int where; /* class of the nodes it may run on (gx_fgd_where_class), 0 = any */
};

/**
 * One typical pod as the per-node walks read it: the shape and its weight
 * in one row, the where class as a bit to test against gx_fgd_node.barred.
 */
struct gx_fgd_row {
    int64_t cpu_milli;
    int64_t mem_mib;
    double weight;
    int gpus;
    int milli;
    uint32_t where_bit; /* 1 << where, 0 for any node */
};

/** The typical-pod table. Plain struct: gx_fgd_model_init before use, no release needed. */
struct gx_fgd_model {
    struct gx_fgd_shape shape[GX_FGD_MAX_SHAPES];
    double weight[GX_FGD_MAX_SHAPES];
    size_t n;
    double inc;   /* weight of the next observation (grows instead of decaying the old) */
    double decay; /* per observation, e.g. 2^(-1/half_life) */
    double half_life;
    double total; /* sum of weights */
    uint64_t observed;
    char where[GX_FGD_MAX_WHERE][GX_FGD_WHERE_LEN]; /* each class's rule; [0] "" is any node */
    int n_where;                                    /* classes in the table, [0] included */
    uint64_t where_gen; /* grows when a class takes a new rule: node answers cached go */
    uint16_t by_milli[GX_FGD_MAX_SHAPES]; /* shape[0..n) in ascending milli */
    /* shape[by_milli[j]] and its weight, kept by gx_fgd_observe: read in order, no gather */
    struct gx_fgd_row row[GX_FGD_MAX_SHAPES];
};

/** Free resources of one node: CPU, memory (-1 = unknown, not checked) and each card's free milli.
 */
struct gx_fgd_node {
    int64_t cpu_milli;
    int64_t mem_mib;
    int free[GX_FGD_MAX_CARDS]; /* 0..1000 */
    int n_cards;
    uint32_t barred; /* bit c: typical pods of where class c may not run here */
};

/** Empty model whose weights halve every @half_life observations (>= 1). */
void gx_fgd_model_init(struct gx_fgd_model *m, double half_life);

/** Set @m's half-life, keeping what it learned (a zeroed @m becomes an empty model). */
void gx_fgd_model_tune(struct gx_fgd_model *m, double half_life);

/**
 * The where class of rule @key in @m (a where key, where.h): its own, a new
 * one, or one no typical pod uses any more. 0 ("any node") for "" and when
 * every class is in use: such a pod then counts everywhere, as it did
 * before classes.
 */
int gx_fgd_where_class(struct gx_fgd_model *m, const char *key);

/** Learn one request (CPU-only ones too: they need CPU a GPU pod may take). Cannot fail. */
void gx_fgd_observe(struct gx_fgd_model *m, const struct gx_fgd_shape *s);

/**
 * Expected milli-GPU of @n that a typical pod of @m could not use; 0 for an
 * empty model. A typical pod barred from @n (@n->barred) can use none of it,
 * as the FGD paper counts a pod whose GPU model the node lacks.
 */
double gx_fgd_frag(const struct gx_fgd_model *m, const struct gx_fgd_node *n);

/**
 * Change of gx_fgd_frag when a pod of shape @s takes CPU and memory of @n
 * and the cards @cards[0..k) (k = @s->gpus; for a share, @cards[0] loses
 * @s->milli). Negative is good: fragmentation goes down. @n is not changed.
 */
double gx_fgd_delta(const struct gx_fgd_model *m, const struct gx_fgd_node *n,
                    const struct gx_fgd_shape *s, const int *cards);

/**
 * gx_fgd_delta of @s taking one card (@s->gpus 1, @s->milli up to 1000) for each card of
 * @n into @out[0..@n->n_cards), at most GX_FGD_MAX_CARDS: the same values,
 * in one pass over the typical pods.
 */
void gx_fgd_share_deltas(const struct gx_fgd_model *m, const struct gx_fgd_node *n,
                         const struct gx_fgd_shape *s, double *out);

/**
 * The cluster's gaps: how many cards have each free amount, 1..999 milli
 * (free and full cards are not gaps). A gap below the smallest share of
 * the typical pods that may run on its node stays as it is: none of them
 * can fill it, so it is a full card there.
 */
struct gx_fgd_gaps {
    int count[GX_FGD_CARD];
    int min_share[GX_FGD_MAX_WHERE]; /* each where class's smallest share; GX_FGD_CARD: none */
    int n_where;                     /* classes in min_share, [0] (any node) included */
};

/** No gaps counted (the smallest shares are left as they are). */
void gx_fgd_gaps_clear(struct gx_fgd_gaps *g);

/**
 * Take the smallest share of each where class of @m's typical pods into
 * @g; true when any changed (the counts are then of the old ones).
 */
bool gx_fgd_gaps_shares(struct gx_fgd_gaps *g, const struct gx_fgd_model *m);

/** The smallest typical share that may run on a node barring classes @barred, milli. */
int gx_fgd_min_open(const struct gx_fgd_gaps *g, uint32_t barred);

/** Count the open gaps of node @n's cards into @g. */
void gx_fgd_gaps_add(struct gx_fgd_gaps *g, const struct gx_fgd_node *n);

/** Take node @n's open gaps, as gx_fgd_gaps_add counted them, out of @g (its shares unchanged). */
void gx_fgd_gaps_sub(struct gx_fgd_gaps *g, const struct gx_fgd_node *n);

/**
 * Change of the sum of squares of the open gap counts when a share takes
 * @take milli of a card with @free free on a node barring classes @barred
 * (Csirik et al., "On the sum-of-squares algorithm for bin packing", JACM
 * 2006). Negative is good: the placement fills a common gap or leaves a
 * rare one, so the gaps the next shares need stay on offer instead of
 * piling up in one size.
 */
double gx_fgd_gap_cost(const struct gx_fgd_gaps *g, uint32_t barred, int free, int take);

#endif
