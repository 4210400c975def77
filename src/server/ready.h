/* SPDX-License-Identifier: Apache-2.0 */
/* ready.h - /readyz: the snapshot, the managed pods, the Leases have synced. */
#ifndef GX_READY_H
#define GX_READY_H

#include <stdbool.h>

#include "service.h"

/** Ready once every configured source has synced: nodes, managed pods, the Leases. */
bool gx_ready(const struct gx_app *app);

#endif
