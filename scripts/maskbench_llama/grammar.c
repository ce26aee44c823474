// grammar.c — llama.cpp's side of MaskBench: forces token ids through
// llama.cpp's grammar sampler (llama_sampler_init_grammar, the matcher
// llama-server uses for json_schema) the way
// enginecore/structured/maskbench_test.go forces them through LLGuidance.
// Our own code; it links against llama.cpp's prebuilt CPU libraries, it
// contains none of it.
//
// It loads only the model's vocabulary (vocab_only) and then reads
// commands from stdin, one per line, answering each with one line on
// stdout:
//
//   G <n>\n<n bytes of GBNF>   compile (llama_sampler_init_grammar, root
//                              "root") → "ok <init µs>" or "err"
//   T <eos> <id> <id> ...      force the ids through a fresh copy of the
//                              last grammar → "r <accepted> <mask ns>..."
//
// For each id: fill an array of all n_vocab candidates (logit 0), time
// llama_sampler_apply (the mask), stop if the id's logit is -INFINITY
// (refused), else llama_sampler_accept it. After the last id the instance
// is accepted only if <eos> is still allowed (complete). One mask time per
// apply, in nanoseconds, CLOCK_MONOTONIC. Logs go to stderr (errors only).
//
// Build: scripts/maskbench_llama/build.sh → .cache/maskbench-grammar
// Usage: .cache/maskbench-grammar MODEL.gguf < commands
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static void on_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// force runs one T line (the text after "T ") against a copy of grammar.
static void force(const struct llama_sampler *grammar, char *line, llama_token_data *cand, int n_vocab) {
    char *end;
    long eos = strtol(line, &end, 10);
    struct llama_sampler *s = llama_sampler_clone(grammar);
    bool accepted = true;
    static int64_t times[1 << 16];
    int n = 0;
    for (char *p = end;; p = end) {
        long id = strtol(p, &end, 10);
        if (end == p) break;
        if (id < 0 || id >= n_vocab) { accepted = false; break; }
        for (int i = 0; i < n_vocab; i++) cand[i] = (llama_token_data){ .id = i, .logit = 0.0f, .p = 0.0f };
        llama_token_data_array arr = { .data = cand, .size = (size_t)n_vocab, .selected = -1, .sorted = false };
        int64_t t0 = now_ns();
        llama_sampler_apply(s, &arr);
        int64_t dt = now_ns() - t0;
        if (n < (int)(sizeof times / sizeof times[0])) times[n++] = dt;
        if (isinf(cand[id].logit)) { accepted = false; break; }
        llama_sampler_accept(s, (llama_token)id);
    }
    if (accepted) {
        for (int i = 0; i < n_vocab; i++) cand[i] = (llama_token_data){ .id = i, .logit = 0.0f, .p = 0.0f };
        llama_token_data_array arr = { .data = cand, .size = (size_t)n_vocab, .selected = -1, .sorted = false };
        llama_sampler_apply(s, &arr);
        accepted = eos >= 0 && eos < n_vocab && !isinf(cand[eos].logit);
    }
    llama_sampler_free(s);
    printf("r %d", accepted ? 1 : 0);
    for (int i = 0; i < n; i++) printf(" %lld", (long long)times[i]);
    putchar('\n');
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.gguf < commands\n", argv[0]);
        return 2;
    }
    llama_log_set(on_log, NULL);
    ggml_backend_load_all_from_path(MASKBENCH_BACKEND_DIR);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "maskbench-grammar: cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    llama_token_data *cand = malloc(sizeof *cand * (size_t)n_vocab);

    struct llama_sampler *grammar = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[0] == 'G') {
            long n = strtol(line + 1, NULL, 10);
            char *gbnf = malloc((size_t)n + 1);
            if (n < 0 || fread(gbnf, 1, (size_t)n, stdin) != (size_t)n) { fprintf(stderr, "maskbench-grammar: short grammar\n"); return 1; }
            gbnf[n] = 0;
            if (grammar) llama_sampler_free(grammar);
            int64_t t0 = now_ns();
            grammar = llama_sampler_init_grammar(vocab, gbnf, "root");
            int64_t dt = now_ns() - t0;
            free(gbnf);
            if (grammar) printf("ok %.1f\n", (double)dt / 1e3);
            else printf("err\n");
        } else if (line[0] == 'T' && grammar) {
            force(grammar, line + 1, cand, n_vocab);
        } else {
            printf("err\n");
        }
        fflush(stdout);
    }
    free(line);
    free(cand);
    if (grammar) llama_sampler_free(grammar);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
