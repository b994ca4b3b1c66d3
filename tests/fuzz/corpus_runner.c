/* A main() for the fuzz targets when they are not built with libFuzzer
 * (FAIR_FUZZ=OFF): runs every file of the given folders (the seed corpus)
 * through LLVMFuzzerTestOneInput once, so that `make test` checks that the
 * targets build and that no seed crashes, under ASan too. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define RUNNER_MAX_INPUT (1024 * 1024)

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "corpus_runner: cannot open %s\n", path);
        return -1;
    }
    uint8_t *buf = malloc(RUNNER_MAX_INPUT);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, RUNNER_MAX_INPUT, f);
    int rc = ferror(f) ? -1 : 0;
    fclose(f);
    if (rc == 0) {
        /* An exact-size copy, so that ASan sees reads past the input. */
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
            free(buf);
            return -1;
        }
        memcpy(exact, buf, n);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
    }
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    long inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "corpus_runner: %s does not exist\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 1;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "corpus_runner: cannot read %s\n", argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            int w = snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (w < 0 || (size_t)w >= sizeof path || run_file(path) != 0) {
                closedir(d);
                return 1;
            }
            inputs++;
        }
        closedir(d);
    }
    printf("corpus_runner: %ld inputs, no crash\n", inputs);
    /* An empty corpus would make the test pass without running anything. */
    return inputs > 0 ? 0 : 1;
}
