/* YAML documents into jansson values, with the size and depth limits that
 * libyaml does not enforce itself. Used by every YAML reader (kubeconfig,
 * the controller's config file, Project/Queue manifests); the decoders then
 * turn the json_t into plain structs.
 *
 * Scalars: quoted scalars are strings; plain true/false become booleans,
 * null/~/empty become null, plain integers that fit int64 become integers,
 * and every other plain scalar (including "2.5") stays a string, so that
 * Kubernetes quantities keep their exact text. Aliases are rejected (they
 * allow "billion laughs" expansion); anchors and tags are ignored. Mapping
 * keys must be scalars. */
#ifndef FAIR_BASE_YAML_H
#define FAIR_BASE_YAML_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

struct fair_yaml_limits {
    size_t max_bytes;  /* input size; default 1 MiB */
    int max_depth;     /* nesting of mappings and sequences; default 32 */
    size_t max_nodes;  /* scalars + collections in all documents; default 100000 */
    size_t max_docs;   /* documents in one stream; default 1000 */
};

/* Fills unset (zero) fields of lim with the defaults. */
void fair_yaml_limits_default(struct fair_yaml_limits *lim);

/* Parses a YAML stream into *docs_out, a new json array with one element
 * per document (empty documents are skipped). lim may be NULL for the
 * defaults. name is used in messages ("config.yaml:12:3: ..."). */
int fair_yaml_parse(const char *name, const char *data, size_t len,
                    const struct fair_yaml_limits *lim, json_t **docs_out,
                    struct fair_error *err);

/* Reads path (refusing files over lim->max_bytes) and parses it. */
int fair_yaml_load_file(const char *path, const struct fair_yaml_limits *lim, json_t **docs_out,
                        struct fair_error *err);

/* Reads a whole file (at most max_bytes) into a new NUL-terminated buffer;
 * *len_out gets its length. Message names the file. */
int fair_read_file(const char *path, size_t max_bytes, char **data_out, size_t *len_out,
                   struct fair_error *err);

#endif
