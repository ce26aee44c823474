// bench.c — llama.cpp's side of `make bench`: prefill and decode tokens/s of
// one GGUF through llama.cpp's C API, with the same prompt token ids, thread
// count and stream count that cmd/tandembench gives Tandem. Our own code; it
// links against llama.cpp, it contains none of it. build.sh compiles it
// twice: against the prebuilt CPU libraries that node-llama-cpp ships
// (LLAMABENCH_BACKEND_DIR names their directory) and against llama.cpp
// built for this machine by native.sh (LLAMABENCH_BACKEND_DIR "": the CPU
// backend is linked in). LLAMABENCH_BUILD describes the build.
//
// One run: load the CPU backends (prebuilt: ggml_backend_load_all_from_path,
// which picks the best-scoring CPU variant library for this machine), load
// the model,
// make a context for S sequences, then reps+1 times (the first is a
// warm-up, not reported):
//   - clear the KV cache;
//   - prefill: one llama_decode with all S prompts (P tokens each, stream s
//     is seq id s, logits only for each prompt's last token);
//   - greedy-pick each stream's first token (argmax of the logits);
//   - decode: D llama_decode calls (4 in the warm-up), each with S tokens (one per stream, its
//     own seq id), each followed by an argmax per stream.
// prefill tok/s = S·P / prefill time; decode tok/s = S·D / decode time
// (aggregate over streams). Flash attention is off; the KV cache type is
// --kv-type (llama.cpp's default f16 unless told otherwise); n_ctx is
// --ctx, else S × (P + D + 1) rounded up to 256 per stream.
//
// Prompt ids: --prompt-file holds at least S·P whitespace-separated token
// ids (stream s uses ids [s·P, (s+1)·P)); without it they are generated
// with splitmix64 from --seed as 100 + x mod 29900, the same rule
// cmd/tandembench uses.
//
// Output: one JSON object on stdout, with the CPU variant loaded, llama.cpp's
// system info (the ggml CPU features compiled in) and the buffer types that
// hold the weights (CPU_REPACK, AMX: the kernels that ran), and the
// process's peak resident set (VmHWM) with its anonymous and file-backed
// (mmapped weights) parts at the end, from /proc/self/status. Logs go to
// stderr (errors only unless --verbose).
//
// --variant-scores instead lists each CPU variant library in the backend
// directory with the score ggml gives it on this CPU (0: unusable), or why
// it does not load — ggml skips such a library silently.
//
// Build: scripts/llamabench/build.sh → .cache/llamabench
// Usage: .cache/llamabench --model M.gguf --threads 2 --prompt-tokens 128
//          --gen-tokens 64 --streams 1 --reps 3 [--prompt-file ids.txt]
//        .cache/llamabench --variant-scores
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

typedef struct {
    const char *model;
    const char *prompt_file;
    const char *backend_dir;
    const char *kv_type;
    int threads;
    int prompt_tokens; // P, per stream
    int gen_tokens;    // D, per stream
    int streams;       // S
    int reps;
    int ubatch;
    int n_ctx; // 0: per stream P + D + 1 rounded up to 256
    uint64_t seed;
    bool verbose;
} options;

#ifndef LLAMABENCH_BUILD
#define LLAMABENCH_BUILD "unknown"
#endif

static bool verbose_log;
static char cpu_variant[512];
static char weight_buffers[512]; // JSON array items: "CPU_Mapped", "CPU_REPACK", ...

static void on_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    const char *mark = strstr(text, "loaded CPU backend from ");
    if (mark) {
        mark += strlen("loaded CPU backend from ");
        const char *base = strrchr(mark, '/');
        snprintf(cpu_variant, sizeof cpu_variant, "%s", base ? base + 1 : mark);
        char *nl = strchr(cpu_variant, '\n');
        if (nl) *nl = 0;
    }
    // llama.cpp logs "load_tensors:   CPU_REPACK model buffer size = ..." per
    // buffer type holding weights.
    const char *size = strstr(text, " model buffer size");
    if (size && strstr(text, "load_tensors:")) {
        const char *name = size;
        while (name > text && name[-1] != ' ') name--;
        size_t n = strlen(weight_buffers);
        snprintf(weight_buffers + n, sizeof weight_buffers - n, "%s\"%.*s\"", n ? ", " : "", (int)(size - name), name);
    }
    if (verbose_log || level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static void usage(void) {
    fprintf(stderr,
            "usage: llamabench --model FILE.gguf [--threads N] [--prompt-tokens P] [--gen-tokens D]\n"
            "                  [--streams S] [--reps R] [--prompt-file IDS] [--seed N] [--kv-type f16|f32]\n"
            "                  [--ubatch N] [--ctx N] [--backend-dir DIR] [--verbose]\n"
            "       llamabench --variant-scores [--backend-dir DIR]\n");
}

// variant_scores prints "NAME SCORE" (or "NAME error: WHY") for every
// libggml-cpu-*.so in dir, loading each as ggml_backend_load_best does.
static int variant_scores(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "llamabench: open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    const char *prefix = "libggml-cpu-";
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || n < 3 || strcmp(e->d_name + n - 3, ".so")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("%s error: %s\n", e->d_name, dlerror());
            continue;
        }
        int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
        if (score) printf("%s %d\n", e->d_name, score());
        else printf("%s error: no ggml_backend_score\n", e->d_name);
        dlclose(h);
    }
    closedir(d);
    return 0;
}

static int parse_int(const char *flag, const char *v, int lo) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || !end || *end || x < lo || x > 1 << 24) {
        fprintf(stderr, "llamabench: %s %s: want an integer >= %d\n", flag, v, lo);
        exit(2);
    }
    return (int)x;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// splitmix64: the prompt-id generator shared with cmd/tandembench.
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// read_ids fills ids[0:n) from path; returns false (with a message) if the
// file holds fewer than n ids.
static bool read_ids(const char *path, llama_token *ids, int n) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "llamabench: open %s: %s\n", path, strerror(errno));
        return false;
    }
    int got = 0;
    long v;
    while (got < n && fscanf(f, "%ld", &v) == 1) ids[got++] = (llama_token)v;
    fclose(f);
    if (got < n) {
        fprintf(stderr, "llamabench: %s holds %d token ids, need %d (streams × prompt tokens)\n", path, got, n);
        return false;
    }
    return true;
}

static llama_token argmax(const float *logits, int n_vocab) {
    int best = 0;
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    return (llama_token)best;
}

static void batch_add(struct llama_batch *b, llama_token tok, llama_pos pos, llama_seq_id seq, bool logits) {
    int i = b->n_tokens++;
    b->token[i] = tok;
    b->pos[i] = pos;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = seq;
    b->logits[i] = logits;
}

static void print_array(const char *name, const double *v, int n) {
    printf("  \"%s\": [", name);
    for (int i = 0; i < n; i++) printf("%s%.3f", i ? ", " : "", v[i]);
    printf("],\n");
}

// status_kib is the value in kB of a "Name:" line of /proc/self/status
// (VmHWM: peak resident set; RssAnon, RssFile: now), -1 if unreadable.
static long status_kib(const char *name) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':') { v = strtol(line + n + 1, NULL, 10); break; }
    fclose(f);
    return v;
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') printf("\\n");
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv) {
    options o = {
        .threads = 1, .prompt_tokens = 128, .gen_tokens = 64, .streams = 1, .reps = 3,
        .ubatch = 512, .seed = 1, .kv_type = "f16",
        .backend_dir = LLAMABENCH_BACKEND_DIR,
    };
    bool scores = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--verbose")) { o.verbose = true; continue; }
        if (!strcmp(a, "--variant-scores")) { scores = true; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "llamabench: %s needs a value\n", a); usage(); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) o.model = v;
        else if (!strcmp(a, "--prompt-file")) o.prompt_file = v;
        else if (!strcmp(a, "--backend-dir")) o.backend_dir = v;
        else if (!strcmp(a, "--kv-type")) o.kv_type = v;
        else if (!strcmp(a, "--threads")) o.threads = parse_int(a, v, 1);
        else if (!strcmp(a, "--prompt-tokens")) o.prompt_tokens = parse_int(a, v, 1);
        else if (!strcmp(a, "--gen-tokens")) o.gen_tokens = parse_int(a, v, 1);
        else if (!strcmp(a, "--streams")) o.streams = parse_int(a, v, 1);
        else if (!strcmp(a, "--reps")) o.reps = parse_int(a, v, 1);
        else if (!strcmp(a, "--ubatch")) o.ubatch = parse_int(a, v, 1);
        else if (!strcmp(a, "--ctx")) o.n_ctx = parse_int(a, v, 1);
        else if (!strcmp(a, "--seed")) o.seed = (uint64_t)parse_int(a, v, 0);
        else { fprintf(stderr, "llamabench: unknown flag %s\n", a); usage(); return 2; }
    }
    if (scores) {
        if (!o.backend_dir[0]) { fprintf(stderr, "llamabench: built against one CPU backend; no variants to score\n"); return 2; }
        return variant_scores(o.backend_dir);
    }
    if (!o.model) { fprintf(stderr, "llamabench: --model is required\n"); usage(); return 2; }
    enum ggml_type kv;
    if (!strcmp(o.kv_type, "f16")) kv = GGML_TYPE_F16;
    else if (!strcmp(o.kv_type, "f32")) kv = GGML_TYPE_F32;
    else { fprintf(stderr, "llamabench: --kv-type %s: want f16 or f32\n", o.kv_type); return 2; }
    if (o.streams > 256) { fprintf(stderr, "llamabench: --streams %d: llama.cpp allows at most 256\n", o.streams); return 2; }

    const int S = o.streams, P = o.prompt_tokens, D = o.gen_tokens;
    llama_token *prompt = malloc(sizeof *prompt * (size_t)S * (size_t)P); // [S][P]
    if (o.prompt_file && !read_ids(o.prompt_file, prompt, S * P)) return 1;

    verbose_log = o.verbose;
    llama_log_set(on_log, NULL);
    if (o.backend_dir[0]) ggml_backend_load_all_from_path(o.backend_dir);
    else snprintf(cpu_variant, sizeof cpu_variant, "libggml-cpu.so (linked in)");
    if (ggml_backend_dev_count() == 0) {
        fprintf(stderr, "llamabench: no ggml backend could be loaded from %s (--backend-dir)\n", o.backend_dir);
        return 1;
    }
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(o.model, mp);
    if (!model) { fprintf(stderr, "llamabench: cannot load %s\n", o.model); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (!o.prompt_file) {
        // ids in [lo, hi): hi = min(30000, V), lo = 100 (0 for a vocabulary of ≤ 100 tokens)
        const uint64_t hi = n_vocab < 30000 ? (uint64_t)n_vocab : 30000, lo = hi > 100 ? 100 : 0;
        uint64_t st = o.seed;
        for (int i = 0; i < S * P; i++) prompt[i] = (llama_token)(lo + splitmix64(&st) % (hi - lo));
    }
    for (int i = 0; i < S * P; i++) {
        if (prompt[i] < 0 || prompt[i] >= n_vocab) {
            fprintf(stderr, "llamabench: prompt token %d out of range [0, %d)\n", prompt[i], n_vocab);
            return 1;
        }
    }

    // Per-sequence context rounded up to 256; the cache is split per seq.
    const int per_seq = ((P + D + 1 + 255) / 256) * 256;
    const int n_batch = S * P > S ? S * P : S;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(per_seq * S);
    if (o.n_ctx) {
        if (o.n_ctx < (P + D + 1) * S) { fprintf(stderr, "llamabench: --ctx %d < S·(P + D + 1) = %d\n", o.n_ctx, (P + D + 1) * S); return 2; }
        cp.n_ctx = (uint32_t)o.n_ctx;
    }
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)(o.ubatch < n_batch ? o.ubatch : n_batch);
    cp.n_seq_max = (uint32_t)S;
    cp.n_threads = o.threads;
    cp.n_threads_batch = o.threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = kv;
    cp.type_v = kv;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "llamabench: cannot create a context (n_ctx %u, n_seq_max %d)\n", cp.n_ctx, S); return 1; }

    struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
    llama_token *last = malloc(sizeof *last * (size_t)S);    // [S] last sampled token per stream
    llama_token *gen0 = malloc(sizeof *gen0 * (size_t)(D + 1)); // stream 0's tokens, last rep
    double *prefill = malloc(sizeof *prefill * (size_t)o.reps); // [reps] tok/s
    double *decode = malloc(sizeof *decode * (size_t)o.reps);   // [reps] tok/s

    for (int rep = -1; rep < o.reps; rep++) { // rep -1 is the warm-up
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = 0;
        for (int s = 0; s < S; s++)
            for (int p = 0; p < P; p++) batch_add(&batch, prompt[s * P + p], p, s, p == P - 1);
        double t0 = now_s();
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "llamabench: prefill failed\n"); return 1; }
        for (int s = 0; s < S; s++) last[s] = argmax(llama_get_logits_ith(ctx, (s + 1) * P - 1), n_vocab);
        double t1 = now_s();
        gen0[0] = last[0];
        const int steps = rep < 0 && D > 4 ? 4 : D; // the warm-up decodes 4 steps
        for (int d = 0; d < steps; d++) {
            batch.n_tokens = 0;
            for (int s = 0; s < S; s++) batch_add(&batch, last[s], P + d, s, true);
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "llamabench: decode step %d failed\n", d); return 1; }
            for (int s = 0; s < S; s++) last[s] = argmax(llama_get_logits_ith(ctx, s), n_vocab);
            gen0[d + 1] = last[0];
        }
        double t2 = now_s();
        if (rep >= 0) {
            prefill[rep] = (double)S * P / (t1 - t0);
            decode[rep] = (double)S * D / (t2 - t1);
        }
    }

    printf("{\n  \"engine\": \"llama.cpp\",\n  \"build\": ");
    print_json_string(LLAMABENCH_BUILD);
    printf(",\n  \"backend_dir\": ");
    print_json_string(o.backend_dir);
    printf(",\n  \"model\": ");
    print_json_string(o.model);
    printf(",\n  \"threads\": %d,\n  \"streams\": %d,\n  \"prompt_tokens\": %d,\n  \"gen_tokens\": %d,\n", o.threads, S, P, D);
    printf("  \"reps\": %d,\n  \"kv_type\": \"%s\",\n  \"flash_attn\": false,\n  \"n_batch\": %d,\n  \"n_ubatch\": %u,\n  \"n_ctx\": %u,\n",
           o.reps, o.kv_type, n_batch, cp.n_ubatch, cp.n_ctx);
    print_array("prefill_tok_s", prefill, o.reps);
    print_array("decode_tok_s", decode, o.reps);
    printf("  \"tokens\": [");
    for (int i = 0; i <= D; i++) printf("%s%d", i ? ", " : "", gen0[i]);
    printf("],\n  \"cpu_variant\": ");
    print_json_string(cpu_variant);
    printf(",\n  \"system_info\": ");
    print_json_string(llama_print_system_info());
    printf(",\n  \"weight_buffers\": [%s],\n", weight_buffers);
    printf("  \"vm_hwm_kib\": %ld,\n  \"rss_anon_kib\": %ld,\n  \"rss_file_kib\": %ld\n}\n",
           status_kib("VmHWM"), status_kib("RssAnon"), status_kib("RssFile"));

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(prompt), free(last), free(gen0), free(prefill), free(decode);
    return 0;
}
