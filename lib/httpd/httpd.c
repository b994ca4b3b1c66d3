/* The route-table HTTP server on evhttp (see httpd.h). */
#include "httpd/httpd.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "base/log.h"

struct route {
    char method[8];
    char path[128];
    fair_httpd_handler fn;
    void *ctx;
};

struct fair_httpd {
    struct evhttp *http;
    int port;
    size_t nroutes;
    struct route routes[FAIR_HTTPD_MAX_ROUTES];
};

static void reply(struct evhttp_request *req, int status, const char *ctype, const char *body,
                  size_t len, int head)
{
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    if (!head && len)
        evbuffer_add(out, body, len);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                         : status == 503 ? "Service Unavailable"
                                         : "Error";
    evhttp_send_reply(req, status, reason, out);
    evbuffer_free(out);
}

static void json_error(struct evhttp_request *req, int status, const char *msg, int head)
{
    char body[256];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", msg);
    reply(req, status, "application/json", body, (size_t)n, head);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct fair_httpd *srv = arg;
    const char *method;
    int head = 0;
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET:
        method = "GET";
        break;
    case EVHTTP_REQ_HEAD:
        method = "GET";
        head = 1;
        break;
    case EVHTTP_REQ_POST:
        method = "POST";
        break;
    default:
        json_error(req, 405, "method not allowed", 0);
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!path || !*path)
        path = "/";
    int path_known = 0;
    for (size_t i = 0; i < srv->nroutes; i++) {
        struct route *r = &srv->routes[i];
        if (strcmp(r->path, path) != 0)
            continue;
        path_known = 1;
        if (strcmp(r->method, method) != 0)
            continue;
        struct fair_buf body;
        const char *ctype = "text/plain; charset=utf-8";
        int status = 200;
        fair_buf_init(&body, 64 << 20);
        int rc = r->fn(r->ctx, query, &body, &ctype, &status);
        if (rc < 0) {
            FAIR_WARN("httpd", "msg=\"handler failed\" path=%s rc=%d", path, rc);
            json_error(req, 500, "internal error", head);
        } else {
            reply(req, status, ctype, fair_buf_str(&body), body.len, head);
        }
        FAIR_DEBUG("httpd", "msg=request method=%s path=%s status=%d", method, path,
                   rc < 0 ? 500 : status);
        fair_buf_release(&body);
        return;
    }
    if (path_known)
        json_error(req, 405, "method not allowed", head);
    else
        json_error(req, 404, "not found", head);
}

int fair_httpd_new(struct event_base *base, const char *addr, int port, struct fair_httpd **out,
                   struct fair_error *err)
{
    struct fair_httpd *srv = NULL;
    int rc = 0;
    *out = NULL;
    if (port < 0 || port > 65535)
        return fair_error_set(err, FAIR_EINVAL, "httpd: bad port %d", port);
    srv = fair_calloc(1, sizeof(*srv));
    if (!srv)
        return fair_error_set(err, FAIR_ENOMEM, "httpd: out of memory");
    srv->http = evhttp_new(base);
    if (!srv->http) {
        rc = fair_error_set(err, FAIR_ENOMEM, "httpd: evhttp_new failed");
        goto out;
    }
    evhttp_set_max_headers_size(srv->http, 16384);
    evhttp_set_max_body_size(srv->http, 1 << 20);
    evhttp_set_timeout(srv->http, 30);
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST);
    evhttp_set_gencb(srv->http, on_request, srv);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(srv->http, addr, (ev_uint16_t)port);
    if (!bs) {
        rc = fair_error_set(err, FAIR_EIO,
                            "httpd: cannot listen on %s:%d (address in use or "
                            "not local?)",
                            addr, port);
        goto out;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            srv->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            srv->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
out:
    if (rc) {
        fair_httpd_free(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

void fair_httpd_free(struct fair_httpd *srv)
{
    if (!srv)
        return;
    if (srv->http)
        evhttp_free(srv->http);
    fair_free(srv);
}

int fair_httpd_route(struct fair_httpd *srv, const char *method, const char *path,
                     fair_httpd_handler handler, void *ctx)
{
    if (!method || !path || !handler || strlen(method) >= sizeof(srv->routes[0].method) ||
        strlen(path) >= sizeof(srv->routes[0].path) || path[0] != '/')
        return FAIR_EINVAL;
    for (size_t i = 0; i < srv->nroutes; i++)
        if (strcmp(srv->routes[i].method, method) == 0 && strcmp(srv->routes[i].path, path) == 0)
            return FAIR_EINVAL;
    if (srv->nroutes == FAIR_HTTPD_MAX_ROUTES)
        return FAIR_ERANGE;
    struct route *r = &srv->routes[srv->nroutes++];
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", path);
    r->fn = handler;
    r->ctx = ctx;
    return 0;
}

int fair_httpd_port(const struct fair_httpd *srv)
{
    return srv->port;
}
