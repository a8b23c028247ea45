/* kernels/targets/machine.c: roofline arithmetic, the machine key and the figures'
 * cache (see machine.h). The measurement itself is kernels/targets/cpu/measure.c. */
#include "kernels/targets/machine.h"
#include "kernels/workload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"

/* ---- roofline arithmetic ------------------------------------------------------ */

static double interpolate(const MachineFigures *m, double one, double all, int threads) {
    if (threads <= 0 || m->cores <= 1 || threads >= m->cores) return threads == 1 ? one : all;
    if (threads == 1) return one;
    return one + (all - one) * (double)(threads - 1) / (double)(m->cores - 1);
}

double Machine_peakFor(const MachineFigures *this, int threads) {
    return interpolate(this, this->peak1_gflops, this->peak_gflops, threads);
}

double Machine_bandwidthFor(const MachineFigures *this, int threads) {
    return interpolate(this, this->bw1_gbs, this->bw_gbs, threads);
}

static bool positive(double x) { return isfinite(x) && x > 0; }

double Machine_levelBandwidthFor(const MachineFigures *this, int level, int threads) {
    double triad = 0, read = 0;
    if (level == ROOF_LEVEL_L2) {
        triad = interpolate(this, this->l2_bw1_gbs, this->l2_bw_gbs, threads);
        read = interpolate(this, this->l2_rd1_gbs, this->l2_rd_gbs, threads);
    } else if (level == ROOF_LEVEL_L3) {
        triad = interpolate(this, this->l3_bw1_gbs, this->l3_bw_gbs, threads);
        read = interpolate(this, this->l3_rd1_gbs, this->l3_rd_gbs, threads);
    } else if (level == ROOF_LEVEL_DRAM) {
        triad = Machine_bandwidthFor(this, threads);
        read = interpolate(this, this->rd_bw1_gbs, this->rd_bw_gbs, threads);
    }
    return isfinite(read) && read > triad ? read : triad;
}

const char *Roof_levelName(int level) {
    switch (level) {
    case ROOF_LEVEL_L1:
        return "L1";
    case ROOF_LEVEL_L2:
        return "L2";
    case ROOF_LEVEL_L3:
        return "L3";
    case ROOF_LEVEL_DRAM:
        return "DRAM";
    default:
        return "?";
    }
}

const char *Roof_boundText(int bound) {
    switch (bound) {
    case 0:
        return "compute-bound";
    case ROOF_LEVEL_L2:
        return "memory-bound (L2)";
    case ROOF_LEVEL_L3:
        return "memory-bound (L3)";
    case ROOF_LEVEL_DRAM:
        return "memory-bound (DRAM)";
    default:
        return "memory-bound";
    }
}

Roof Roof_forWorkload(const MachineFigures *m, int threads, const Workload *wl) {
    return Roof_forArithmetic(m, threads, wl, 0);
}

Roof Roof_forArithmetic(const MachineFigures *m, int threads, const Workload *wl, double exec_flops) {
    double flops = Workload_flops(wl), exec = positive(exec_flops) ? exec_flops : Workload_usefulFlops(wl);
    Roof r = Roof_compute(m, threads, exec, Workload_compulsoryBytes(wl));
    if (positive(exec) && r.gflops > 0) r.gflops *= flops / exec;
    return r;
}

Roof Roof_compute(const MachineFigures *m, int threads, double flops, double bytes) {
    Roof r;
    memset(&r, 0, sizeof r);
    if (!m || !positive(flops) || !positive(bytes)) return r;
    int t = threads <= 0 || threads > m->cores ? m->cores : threads;
    if (t < 1) t = 1;
    double peak = Machine_peakFor(m, threads);
    if (!positive(peak) || !positive(Machine_bandwidthFor(m, threads))) return r;
    r.peak_gflops = peak;
    r.intensity = flops / bytes;
    /* the smallest level that holds the compulsory bytes, among those measured */
    int level = ROOF_LEVEL_DRAM;
    if (m->l1d_bytes > 0 && bytes <= (double)m->l1d_bytes * t)
        level = ROOF_LEVEL_L1;
    else if (m->l2_bytes > 0 && bytes <= (double)m->l2_bytes * t &&
             positive(Machine_levelBandwidthFor(m, ROOF_LEVEL_L2, threads)))
        level = ROOF_LEVEL_L2;
    else if (m->l3_bytes > 0 && bytes <= (double)m->l3_bytes &&
             positive(Machine_levelBandwidthFor(m, ROOF_LEVEL_L3, threads)))
        level = ROOF_LEVEL_L3;
    r.level = level;
    if (level == ROOF_LEVEL_L1) { /* two vector loads a cycle: no limit below the FMA peak */
        r.gflops = peak;
        return r;
    }
    r.bw_gbs = Machine_levelBandwidthFor(m, level, threads);
    /* The part of the bytes the level below holds is served at that level's
     * speed: a working set twice the L2 runs half from the L2. */
    double below_cap = level == ROOF_LEVEL_L3     ? (double)m->l2_bytes * t
                       : level == ROOF_LEVEL_DRAM ? (double)m->l3_bytes
                                                  : 0;
    double below_bw = level == ROOF_LEVEL_L3     ? Machine_levelBandwidthFor(m, ROOF_LEVEL_L2, threads)
                      : level == ROOF_LEVEL_DRAM ? Machine_levelBandwidthFor(m, ROOF_LEVEL_L3, threads)
                                                 : 0;
    if (below_cap > 0 && positive(below_bw) && below_bw > r.bw_gbs) {
        double fast = below_cap < bytes ? below_cap : bytes;
        r.bw_gbs = bytes / (fast / below_bw + (bytes - fast) / r.bw_gbs);
    }
    double mem = r.bw_gbs * r.intensity; /* GB/s x FLOP/B = GFLOP/s */
    r.memory_bound = mem < peak;
    r.gflops = r.memory_bound ? mem : peak;
    return r;
}

double Roof_share(double gflops, double roof_gflops) {
    return positive(roof_gflops) && isfinite(gflops) && gflops > 0 ? gflops / roof_gflops : 0;
}

double Roof_latency(double flops, double roof_gflops) {
    return positive(roof_gflops) && positive(flops) ? flops / (roof_gflops * 1e9) : 0;
}

/* ---- key ------------------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void Machine_keyOf(const char *target, const char *model, const char *flags, int cores, char *out) {
    char c[32];
    snprintf(c, sizeof c, "|%d", cores);
    uint64_t h = 1469598103934665603ull;
    h = fnv1a(h, target ? target : "");
    h = fnv1a(h, "|");
    h = fnv1a(h, model ? model : "");
    h = fnv1a(h, "|");
    h = fnv1a(h, flags ? flags : "");
    h = fnv1a(h, c);
    snprintf(out, MACHINE_KEY_LEN, "%016" PRIx64, h);
}

static void trim_value(const char *line, char *out, size_t n) {
    const char *v = strchr(line, ':');
    out[0] = '\0';
    if (!v) return;
    v++;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t len = strcspn(v, "\n");
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    snprintf(out, n, "%.*s", (int)len, v);
}

static int usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return c;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

void Machine_cpuKey(char *key, char *model, size_t model_len) {
    char name[256] = "CPU";
    char *flags = NULL;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        bool have_name = false;
        while (getline(&line, &cap, f) > 0) {
            if (!have_name && strncmp(line, "model name", 10) == 0) {
                trim_value(line, name, sizeof name);
                have_name = true;
            } else if (!flags && (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0)) {
                size_t n = strlen(line) + 1;
                flags = malloc(n);
                if (!flags) abort();
                trim_value(line, flags, n);
            }
            if (have_name && flags) break;
        }
        free(line);
        fclose(f);
    }
    Machine_keyOf("cpu", name, flags ? flags : "", usable_cores(), key);
    if (model && model_len) snprintf(model, model_len, "%s", name);
    free(flags);
}

/* ---- cache sizes ------------------------------------------------------------------ */

static int64_t read_size(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    int64_t v = 0;
    if (fgets(buf, sizeof buf, f)) {
        char *end = NULL;
        long long x = strtoll(buf, &end, 10);
        if (end && x > 0) {
            v = x;
            if (*end == 'K')
                v *= 1024;
            else if (*end == 'M')
                v *= 1024 * 1024;
            else if (*end == 'G')
                v *= 1024LL * 1024 * 1024;
        }
    }
    fclose(f);
    return v;
}

static void read_word(const char *path, char *out, size_t n) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

void Machine_cacheSizes(int64_t *l1d, int64_t *l2, int64_t *l3) {
    *l1d = *l2 = *l3 = 0;
    for (int i = 0; i < 16; i++) {
        char dir[128], path[192], type[32], level[16];
        snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%d", i);
        snprintf(path, sizeof path, "%s/type", dir);
        read_word(path, type, sizeof type);
        if (!type[0]) break;
        snprintf(path, sizeof path, "%s/level", dir);
        read_word(path, level, sizeof level);
        snprintf(path, sizeof path, "%s/size", dir);
        int64_t size = read_size(path);
        if (strcmp(type, "Instruction") == 0) continue;
        if (strcmp(level, "1") == 0)
            *l1d = size;
        else if (strcmp(level, "2") == 0)
            *l2 = size;
        else if (strcmp(level, "3") == 0)
            *l3 = size;
    }
}

/* ---- cache file ------------------------------------------------------------------- */

#define CACHE_MAGIC "tunetop-machine 1"

Status Machine_cachePath(const char *target, char *out, size_t n, char *err) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int k;
    if (xdg && xdg[0] == '/')
        k = snprintf(out, n, "%s/tunetop/machine-%s.txt", xdg, target);
    else if (home && *home)
        k = snprintf(out, n, "%s/.cache/tunetop/machine-%s.txt", home, target);
    else
        return tt_fail(err, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
    if (k < 0 || (size_t)k >= n) return tt_fail(err, "the cache directory's path is too long");
    return TT_OK;
}

static void body(StrBuf *sb, const MachineFigures *m) {
    StrBuf_printf(sb, "%s\n", CACHE_MAGIC);
    StrBuf_printf(sb, "target=%s\nkey=%s\nmodel=%s\nisa=%s\n", m->target, m->key, m->model, m->isa);
    StrBuf_printf(sb, "cores=%d\nvector_floats=%d\ncomputed=%d\nquick=%d\n", m->cores, m->vector_floats,
                  m->computed ? 1 : 0, m->quick ? 1 : 0);
    StrBuf_printf(sb, "peak1_gflops=%.17g\npeak_gflops=%.17g\nbw1_gbs=%.17g\nbw_gbs=%.17g\n", m->peak1_gflops,
                  m->peak_gflops, m->bw1_gbs, m->bw_gbs);
    StrBuf_printf(sb, "l2_bw1_gbs=%.17g\nl2_bw_gbs=%.17g\nl3_bw1_gbs=%.17g\nl3_bw_gbs=%.17g\n", m->l2_bw1_gbs,
                  m->l2_bw_gbs, m->l3_bw1_gbs, m->l3_bw_gbs);
    StrBuf_printf(sb,
                  "rd_bw1_gbs=%.17g\nrd_bw_gbs=%.17g\nl2_rd1_gbs=%.17g\nl2_rd_gbs=%.17g\nl3_rd1_gbs=%.17g\n"
                  "l3_rd_gbs=%.17g\n",
                  m->rd_bw1_gbs, m->rd_bw_gbs, m->l2_rd1_gbs, m->l2_rd_gbs, m->l3_rd1_gbs, m->l3_rd_gbs);
    StrBuf_printf(sb, "l1d=%lld\nl2=%lld\nl3=%lld\n", (long long)m->l1d_bytes, (long long)m->l2_bytes,
                  (long long)m->l3_bytes);
    StrBuf_printf(sb, "measured_at=%.17g\nmeasure_s=%.17g\ntriad_bytes=%lld\n", m->measured_at, m->measure_s,
                  (long long)m->triad_bytes);
}

static uint64_t checksum(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

char *Machine_format(const MachineFigures *this) {
    StrBuf sb;
    StrBuf_init(&sb);
    body(&sb, this);
    StrBuf_printf(&sb, "sum=%016" PRIx64 "\n", checksum(sb.data, sb.len));
    return StrBuf_take(&sb);
}

static bool parse_double(const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno) return false;
    *out = x;
    return true;
}

static bool parse_ll(const char *v, long long *out) {
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno) return false;
    *out = x;
    return true;
}

Status Machine_parse(const char *text, MachineFigures *out, char *why) {
    memset(out, 0, sizeof *out);
    size_t magic = strlen(CACHE_MAGIC);
    if (strncmp(text, CACHE_MAGIC, magic) != 0 || text[magic] != '\n')
        return tt_fail(why, "it does not start with \"%s\"", CACHE_MAGIC);
    const char *sum = strstr(text, "\nsum=");
    if (!sum) return tt_fail(why, "it has no checksum line");
    uint64_t want = 0;
    if (sscanf(sum + 5, "%16" SCNx64, &want) != 1) return tt_fail(why, "its checksum line is not a number");
    if (checksum(text, (size_t)(sum - text) + 1) != want)
        return tt_fail(why, "its checksum does not match its contents");
    enum { F_TARGET, F_KEY, F_PEAK1, F_PEAK, F_BW1, F_BW, F_CORES, F_L2A, F_L2B, F_L3A, F_L3B, F_N, F_OPT };
    bool seen[F_N] = {false};
    const char *p = text + magic + 1;
    while (p < sum + 1) {
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        char line[512];
        size_t len = (size_t)(nl - p);
        if (len >= sizeof line) return tt_fail(why, "a line is too long");
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        char *eq = strchr(line, '=');
        if (!eq) return tt_fail(why, "line \"%.60s\" is not key=value", line);
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        double d;
        long long ll = 0;
        bool ok = true;
        if (strcmp(k, "target") == 0) {
            snprintf(out->target, sizeof out->target, "%s", v);
            seen[F_TARGET] = true;
        } else if (strcmp(k, "key") == 0) {
            ok = strlen(v) == MACHINE_KEY_LEN - 1;
            if (ok) memcpy(out->key, v, MACHINE_KEY_LEN);
            seen[F_KEY] = ok;
        } else if (strcmp(k, "model") == 0) {
            snprintf(out->model, sizeof out->model, "%s", v);
        } else if (strcmp(k, "isa") == 0) {
            snprintf(out->isa, sizeof out->isa, "%s", v);
        } else if (strcmp(k, "cores") == 0) {
            ok = parse_ll(v, &ll) && ll > 0 && ll < 1 << 20;
            out->cores = (int)ll;
            seen[F_CORES] = ok;
        } else if (strcmp(k, "vector_floats") == 0) {
            ok = parse_ll(v, &ll) && ll >= 0 && ll <= 64;
            out->vector_floats = (int)ll;
        } else if (strcmp(k, "computed") == 0 || strcmp(k, "quick") == 0) {
            ok = parse_ll(v, &ll) && (ll == 0 || ll == 1);
            if (k[0] == 'c')
                out->computed = ll == 1;
            else
                out->quick = ll == 1;
        } else if (strcmp(k, "l1d") == 0 || strcmp(k, "l2") == 0 || strcmp(k, "l3") == 0 ||
                   strcmp(k, "triad_bytes") == 0) {
            ok = parse_ll(v, &ll) && ll >= 0;
            if (strcmp(k, "l1d") == 0)
                out->l1d_bytes = ll;
            else if (strcmp(k, "l2") == 0)
                out->l2_bytes = ll;
            else if (strcmp(k, "l3") == 0)
                out->l3_bytes = ll;
            else
                out->triad_bytes = ll;
        } else if (parse_double(v, &d)) {
            int f = -1;
            if (strcmp(k, "peak1_gflops") == 0)
                out->peak1_gflops = d, f = F_PEAK1;
            else if (strcmp(k, "peak_gflops") == 0)
                out->peak_gflops = d, f = F_PEAK;
            else if (strcmp(k, "bw1_gbs") == 0)
                out->bw1_gbs = d, f = F_BW1;
            else if (strcmp(k, "bw_gbs") == 0)
                out->bw_gbs = d, f = F_BW;
            else if (strcmp(k, "l2_bw1_gbs") == 0)
                out->l2_bw1_gbs = d, f = F_L2A;
            else if (strcmp(k, "l2_bw_gbs") == 0)
                out->l2_bw_gbs = d, f = F_L2B;
            else if (strcmp(k, "l3_bw1_gbs") == 0)
                out->l3_bw1_gbs = d, f = F_L3A;
            else if (strcmp(k, "l3_bw_gbs") == 0)
                out->l3_bw_gbs = d, f = F_L3B;
            else if (strcmp(k, "rd_bw1_gbs") == 0)
                out->rd_bw1_gbs = d, f = F_OPT;
            else if (strcmp(k, "rd_bw_gbs") == 0)
                out->rd_bw_gbs = d, f = F_OPT;
            else if (strcmp(k, "l2_rd1_gbs") == 0)
                out->l2_rd1_gbs = d, f = F_OPT;
            else if (strcmp(k, "l2_rd_gbs") == 0)
                out->l2_rd_gbs = d, f = F_OPT;
            else if (strcmp(k, "l3_rd1_gbs") == 0)
                out->l3_rd1_gbs = d, f = F_OPT;
            else if (strcmp(k, "l3_rd_gbs") == 0)
                out->l3_rd_gbs = d, f = F_OPT;
            else if (strcmp(k, "measured_at") == 0)
                out->measured_at = d;
            else if (strcmp(k, "measure_s") == 0)
                out->measure_s = d;
            if (f == F_OPT) { /* read-only figures: optional (older files), 0 = not measured */
                ok = isfinite(d) && d >= 0;
            } else if (f >= F_L2A) { /* cache levels: 0 = not measured */
                ok = isfinite(d) && d >= 0;
                seen[f] = ok;
            } else if (f >= 0) {
                ok = positive(d);
                seen[f] = ok;
            }
        } else {
            ok = false;
        }
        if (!ok) return tt_fail(why, "the value of %s (\"%.40s\") is not valid", k, v);
    }
    static const char *const names[F_N] = {"target", "key",        "peak1_gflops", "peak_gflops", "bw1_gbs",  "bw_gbs",
                                           "cores",  "l2_bw1_gbs", "l2_bw_gbs",    "l3_bw1_gbs",  "l3_bw_gbs"};
    for (int i = 0; i < F_N; i++)
        if (!seen[i]) return tt_fail(why, "it has no %s", names[i]);
    return TT_OK;
}

Status Machine_load(const char *path, const char *expect_key, MachineFigures *out, char *why) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return tt_fail(why, "no cached figures in %s", path);
        return tt_fail(why, "cannot read the cache file %s: %s", path, strerror(errno));
    }
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    bool big = !feof(f);
    fclose(f);
    text[n] = '\0';
    char detail[TT_ERRLEN];
    if (big) return tt_fail(why, "the cache file %s is damaged (longer than any cache file)", path);
    if (memchr(text, '\0', n)) return tt_fail(why, "the cache file %s is damaged (binary bytes)", path);
    if (Machine_parse(text, out, detail) != TT_OK)
        return tt_fail(why, "the cache file %s is damaged (%s)", path, detail);
    if (expect_key && strcmp(out->key, expect_key) != 0)
        return tt_fail(why, "the cache file %s holds another machine's figures (%s, key %s; this machine's key is %s)",
                       path, out->model[0] ? out->model : "unknown model", out->key, expect_key);
    return TT_OK;
}

static Status make_dirs(char *path, char *err) {
    /* every parent directory of path (path is a file) */
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        int rc = mkdir(path, 0755);
        int e = errno;
        *s = '/';
        if (rc != 0 && e != EEXIST) return tt_fail(err, "cannot create the cache directory: %s", strerror(e));
    }
    return TT_OK;
}

Status Machine_save(const char *path, const MachineFigures *this, char *err) {
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return tt_fail(err, "cache path too long");
    if (make_dirs(dir, err) != TT_OK) return TT_ERR;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    char *text = Machine_format(this);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(text);
        return tt_fail(err, "cannot write the cache file %s: %s", tmp, strerror(errno));
    }
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return tt_fail(err, "cannot write the cache file %s: %s", path, strerror(e));
    }
    return TT_OK;
}

/* ---- GPU figures from the architecture table ------------------------------------ */

typedef struct GpuArch {
    int major, minor;
    int fp32_per_sm;  /* FP32 lanes per SM */
    double clock_ghz; /* typical boost clock of the reference part */
    double bw_gbs;    /* memory bandwidth of the reference part */
    int ref_sms;      /* SMs of the reference part (when the device count is unknown) */
    const char *part;
} GpuArch;

static const GpuArch GPU_ARCHS[] = {
    {7, 0, 64, 1.53, 900, 80, "V100 SXM2"},       {7, 5, 64, 1.59, 320, 40, "T4"},
    {8, 0, 64, 1.41, 2039, 108, "A100 SXM 80GB"}, {8, 6, 128, 1.74, 936, 82, "RTX 3090"},
    {8, 9, 128, 2.52, 1008, 128, "RTX 4090"},     {9, 0, 128, 1.98, 3352, 132, "H100 SXM"},
};

Status Machine_computedGpu(const DeviceInfo *dev, MachineFigures *out, char *err) {
    memset(out, 0, sizeof *out);
    const GpuArch *a = NULL;
    for (size_t i = 0; i < sizeof GPU_ARCHS / sizeof GPU_ARCHS[0]; i++)
        if (GPU_ARCHS[i].major == dev->sm_major && GPU_ARCHS[i].minor == dev->sm_minor) a = &GPU_ARCHS[i];
    if (!a) return tt_fail(err, "no figures for sm_%d%d in the architecture table", dev->sm_major, dev->sm_minor);
    int sms = dev->multiprocessors > 0 ? dev->multiprocessors : a->ref_sms;
    snprintf(out->target, sizeof out->target, "cuda");
    snprintf(out->model, sizeof out->model, "%.95s", dev->present && dev->name[0] ? dev->name : a->part);
    snprintf(out->isa, sizeof out->isa, "sm_%d%d", dev->sm_major, dev->sm_minor);
    Machine_keyOf("cuda", out->model, out->isa, sms, out->key);
    out->cores = sms;
    out->computed = true;
    out->peak_gflops = (double)sms * a->fp32_per_sm * 2.0 * a->clock_ghz;
    out->peak1_gflops = out->peak_gflops / sms;
    out->bw_gbs = a->bw_gbs;
    out->bw1_gbs = a->bw_gbs / sms;
    return TT_OK;
}
