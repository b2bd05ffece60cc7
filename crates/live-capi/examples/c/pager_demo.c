/*
 * A region four times the DRAM budget: write every page, read every page back and check it.
 * Pages that do not fit in the budget go to the compressed pool and the emulated PCM tier and
 * come back on access. Done twice: faults resolved in the library's SIGBUS handler (the
 * default), then by its handler thread. Build: see crates/live-capi/tests/c_example.rs (or
 * docs/live.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmswap.h"

#define MIB ((uint64_t)1024 * 1024)
#define PAGE ((uint64_t)4096)

static int run(uint32_t fault_path, const char *name) {
    const uint64_t budget = 16 * MIB;
    NvmswapPager *pager = nvmswap_pager_new_with(budget, 25, "emulated:pcm", 64 * MIB, fault_path);
    if (pager == NULL) {
        fprintf(stderr, "pager: %s\n", nvmswap_last_error());
        return 1;
    }
    NvmswapRegion *region = nvmswap_region_new(pager, 4 * budget);
    if (region == NULL) {
        fprintf(stderr, "region: %s\n", nvmswap_last_error());
        return 1;
    }
    uint8_t *mem = nvmswap_region_ptr(region);
    uint64_t len = nvmswap_region_len(region);
    /* Each page holds its own number, then a pattern: compressible, and checkable. */
    for (uint64_t off = 0; off < len; off += PAGE) {
        uint64_t page = off / PAGE;
        memcpy(mem + off, &page, sizeof page);
        memset(mem + off + sizeof page, (int)(page % 251), 64);
    }
    uint64_t bad = 0;
    for (uint64_t off = 0; off < len; off += PAGE) {
        uint64_t page;
        memcpy(&page, mem + off, sizeof page);
        if (page != off / PAGE || mem[off + sizeof page + 63] != (uint8_t)(off / PAGE % 251)) {
            bad++;
        }
    }
    NvmswapStats stats;
    nvmswap_pager_stats(pager, &stats);
    /* A pager with a live region refuses to be freed. */
    if (nvmswap_pager_free(pager) != -1) {
        fprintf(stderr, "pager freed while its region was alive\n");
        return 1;
    }
    nvmswap_region_free(region);
    if (nvmswap_pager_free(pager) != 0) {
        fprintf(stderr, "pager free: %s\n", nvmswap_last_error());
        return 1;
    }
    printf("%s: pages %" PRIu64 " mismatches %" PRIu64 " faults %" PRIu64 " evictions %" PRIu64
           "\n",
           name, len / PAGE, bad, stats.faults, stats.evictions);
    return bad == 0 ? 0 : 2;
}

int main(void) {
    int rc = run(NVMSWAP_FAULT_SIGBUS, "sigbus");
    if (rc != 0) {
        return rc;
    }
    /* An unknown fault path is refused with a message. */
    if (nvmswap_pager_new_with(16 * MIB, 25, NULL, 0, 7) != NULL) {
        fprintf(stderr, "fault path 7 was accepted\n");
        return 1;
    }
    return run(NVMSWAP_FAULT_HANDLER_THREAD, "handler");
}
