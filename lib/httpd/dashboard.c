/* The finance dashboard (see dashboard.h): the embedded page and the JSON
 * endpoints it reads. Everything the browser needs is in this file. */
#include "httpd/dashboard.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "ledger/report.h"

static const char page[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>Fairshare GPU ledger</title>\n"
    "<style>\n"
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f7f9;"
    "color:#1d2330}\n"
    "header{background:#1d2330;color:#fff;padding:12px 24px;display:flex;align-items:center;"
    "gap:24px}\n"
    "header h1{font-size:20px;margin:0;font-weight:600}\n"
    "header form{display:flex;gap:8px;align-items:center;font-size:14px}\n"
    "main{display:grid;grid-template-columns:1fr 1fr;gap:16px;padding:16px 24px}\n"
    "section{background:#fff;border-radius:8px;padding:12px 16px;"
    "box-shadow:0 1px 3px rgba(0,0,0,.12)}\n"
    "section.wide{grid-column:1 / span 2}\n"
    "h2{font-size:15px;margin:4px 0 8px}\n"
    "table{border-collapse:collapse;width:100%;font-size:13px}\n"
    "th,td{padding:4px 8px;border-bottom:1px solid #e3e6eb;text-align:right}\n"
    "th:first-child,td:first-child{text-align:left}\n"
    "th{background:#eef0f4;font-weight:600}\n"
    "svg text{font-size:12px;fill:#1d2330}\n"
    ".legend span{display:inline-block;margin-right:12px;font-size:12px}\n"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
    "#status{padding:0 24px;color:#8a1c1c;font-size:13px}\n"
    "</style></head>\n<body>\n"
    "<header><h1>Fairshare &mdash; GPU ledger</h1>\n"
    "<form id=\"period\">from <input id=\"from\" name=\"from\" type=\"date\"> to "
    "<input id=\"to\" name=\"to\" type=\"date\"> by <select id=\"by\" name=\"by\">"
    "<option>team</option><option>project</option><option>queue</option>"
    "<option>namespace</option></select> <button>Show</button></form></header>\n"
    "<p id=\"status\">loading&hellip;</p>\n"
    "<main>\n"
    "<section><h2>GPU-hours per <span id=\"by-label\">team</span> "
    "<small id=\"period-label\"></small></h2>\n"
    "<div class=\"legend\"><span><i class=\"sw\" style=\"background:#2f6fde\"></i>in quota</span>"
    "<span><i class=\"sw\" style=\"background:#f0a030\"></i>borrowed</span></div>\n"
    "<div id=\"teams-chart\"></div></section>\n"
    "<section><h2>Report</h2><table id=\"report-table\"><thead><tr><th id=\"report-key\">team</th>"
    "<th>GPU-hours</th><th>in quota</th><th>borrowed</th><th>preempted</th><th>lent</th>"
    "<th>avg GPUs</th><th>pods</th></tr></thead><tbody></tbody></table></section>\n"
    "<section class=\"wide\"><h2>Allocation against fair share per queue (GPUs)</h2>\n"
    "<div class=\"legend\"><span><i class=\"sw\" style=\"background:#2f6fde\"></i>allocated</span>"
    "<span><i class=\"sw\" style=\"background:#1a9a50\"></i>fair share</span>"
    "<span><i class=\"sw\" style=\"background:#999\"></i>guaranteed</span></div>\n"
    "<div id=\"queues-chart\"></div></section>\n"
    "<section class=\"wide\"><h2>Current queues <small id=\"queues-asof\"></small></h2>\n"
    "<table id=\"queues-table\"><thead><tr><th>queue</th><th>team</th><th>allocated</th>"
    "<th>guaranteed</th><th>fair share</th><th>borrowed</th><th>lent</th><th>pending</th></tr>"
    "</thead><tbody></tbody></table></section>\n"
    "</main>\n"
    "<script>\n"
    "'use strict';\n"
    "const $=id=>document.getElementById(id);\n"
    "const NS='http://www.w3.org/2000/svg';\n"
    "function el(tag,attrs,text){const e=document.createElementNS(NS,tag);"
    "for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;"
    "return e;}\n"
    "async function getJSON(url){const r=await fetch(url);const j=await r.json();"
    "if(!r.ok)throw new Error(url+': '+(j.error||r.status));return j;}\n"
    "function day(ms){return new Date(ms).toISOString().slice(0,10);}\n"
    "function gpus(m){return (m/1000).toFixed(3).replace(/\\.?0+$/,'')||'0';}\n"
    "function cell(tr,text){const td=document.createElement('td');td.textContent=text;"
    "tr.appendChild(td);}\n"
    "function bars(rep,by){\n"
    " const rows=rep.rows,W=560,rh=28,lw=130,H=rows.length*rh+24;\n"
    " const svg=el('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H,id:'teams-svg'});\n"
    " const max=Math.max(1e-9,...rows.map(r=>r.gpu_hours));\n"
    " rows.forEach((r,i)=>{const y=i*rh+8,w=(W-lw-110)*r.gpu_hours/max,"
    "wq=(W-lw-110)*r.in_quota_gpu_hours/max;\n"
    "  svg.appendChild(el('text',{x:0,y:y+15,'class':'bar-label'},r[by]));\n"
    "  svg.appendChild(el('rect',{x:lw,y:y,width:wq,height:rh-8,fill:'#2f6fde'}));\n"
    "  svg.appendChild(el('rect',{x:lw+wq,y:y,width:Math.max(0,w-wq),height:rh-8,"
    "fill:'#f0a030'}));\n"
    "  svg.appendChild(el('text',{x:lw+w+6,y:y+15,'class':'bar-value'},"
    "r.gpu_hours.toFixed(3)+' GPU-h'));});\n"
    " if(!rows.length)svg.appendChild(el('text',{x:0,y:16},'no GPU use in this period'));\n"
    " $('teams-chart').replaceChildren(svg);}\n"
    "function table(rep,by){const tb=$('report-table').tBodies[0];tb.replaceChildren();\n"
    " $('report-key').textContent=by;\n"
    " for(const r of rep.rows.concat([rep.total])){const tr=document.createElement('tr');\n"
    "  cell(tr,r[by]);for(const k of ['gpu_hours','in_quota_gpu_hours','borrowed_gpu_hours',"
    "'preempted_gpu_hours'])cell(tr,r[k].toFixed(3));\n"
    "  cell(tr,r.lent_gpu_hours===null?'-':r.lent_gpu_hours.toFixed(3));"
    "cell(tr,r.avg_gpus.toFixed(3));cell(tr,r.pods);tb.appendChild(tr);}}\n"
    "function lines(s){const box=$('queues-chart');box.replaceChildren();\n"
    " const W=360,H=150,L=40,B=20;\n"
    " for(const q of s.queues.slice(0,24)){\n"
    "  const svg=el('svg',{width:W,height:H+30,'class':'queue-chart','data-queue':q.queue});\n"
    "  const pts=q.points;const t0=s.from_ms,t1=s.to_ms;\n"
    "  const max=Math.max(1,...pts.map(p=>Math.max(p[1],p[2],p[3])));\n"
    "  const X=t=>L+(W-L-8)*(t-t0)/Math.max(1,t1-t0),Y=v=>10+(H-B-10)*(1-v/max);\n"
    "  svg.appendChild(el('text',{x:L,y:H+22},q.queue+' ('+q.team+')'));\n"
    "  "
    "svg.appendChild(el('text',{x:0,y:14},gpus(max)));svg.appendChild(el('text',{x:0,y:H-B},'0'));"
    "\n"
    "  svg.appendChild(el('line',{x1:L,y1:H-B,x2:W-8,y2:H-B,stroke:'#ccc'}));\n"
    "  [[3,'#999','2,3'],[2,'#1a9a50','6,3'],[1,'#2f6fde','']].forEach(([k,c,d])=>{\n"
    "   const p=pts.map(v=>X(v[0]).toFixed(1)+','+Y(v[k]).toFixed(1)).join(' ');\n"
    "   svg.appendChild(el('polyline',{points:p,fill:'none',stroke:c,'stroke-width':2,"
    "'stroke-dasharray':d}));});\n"
    "  svg.appendChild(el('text',{x:L,y:H-2},day(t0)));\n"
    "  svg.appendChild(el('text',{x:W-80,y:H-2},day(t1-1)));\n"
    "  box.appendChild(svg);}\n"
    " if(!s.queues.length)box.textContent='no queue samples in this period';}\n"
    "function queues(c){const tb=$('queues-table').tBodies[0];tb.replaceChildren();\n"
    " $('queues-asof').textContent=c.t_ms?'as of '+new Date(c.t_ms).toISOString():'(no samples)';\n"
    " for(const q of c.queues){const tr=document.createElement('tr');cell(tr,q.queue);"
    "cell(tr,q.team);\n"
    "  for(const k of ['allocated','guaranteed','fair_share','borrowed','lent','pending'])"
    "cell(tr,gpus(q[k]));tb.appendChild(tr);}}\n"
    "async function main(){\n"
    " const p=new URLSearchParams(location.search);\n"
    " const cur=await getJSON('/api/v1/queues/current');\n"
    " let from=p.get('from'),to=p.get('to');const by=p.get('by')||'team';\n"
    " if(!from||!to){const end=cur.heartbeat_ms||Date.now();to=day(end+864e5);"
    "from=day(end-29*864e5);}\n"
    " $('from').value=from;$('to').value=to;$('by').value=by;$('by-label').textContent=by;\n"
    " $('period-label').textContent=from+' to '+to;\n"
    " const q='from='+encodeURIComponent(from)+'&to='+encodeURIComponent(to);\n"
    /* A viewer may see the queues but not the GPU-hours (403): say so there. */
    " let rep=null;\n"
    " try{rep=await getJSON('/api/v1/reports/gpu-hours?'+q+'&by='+by+'&format=json');}\n"
    " catch(e){$('teams-chart').textContent=e.message;}\n"
    " if(rep){bars(rep,by);table(rep,by);}\n"
    " lines(await getJSON('/api/v1/queues/samples?'+q));queues(cur);\n"
    " $('status').textContent='';$('status').setAttribute('data-ready','1');}\n"
    "main().catch(e=>{$('status').textContent='error: '+e.message;});\n"
    "</script>\n</body></html>\n";

int fair_dashboard_page(void *ledger, const char *query, struct fair_buf *body,
                        const char **content_type, int *status)
{
    (void)ledger;
    (void)query;
    *content_type = "text/html; charset=utf-8";
    *status = 200;
    return fair_buf_append(body, page, sizeof(page) - 1);
}

static int bad_request(struct fair_buf *body, const char **ct, int *status, int code,
                       const char *msg)
{
    fair_buf_reset(body);
    *ct = "application/json";
    *status = code;
    int rc = fair_buf_appends(body, "{\"error\":");
    rc = rc || fair_json_str(body, msg);
    rc = rc || fair_buf_appends(body, "}\n");
    return rc ? FAIR_ENOMEM : 0;
}

/* The bucket numbers of the partial days at the edges (rollup path), as
 * rollup_sql writes them. */
#define EDGE_BEFORE (-1)
#define EDGE_AFTER 1000000000

static const char raw_sql[] =
    "SELECT d.queue, d.team, (s.t_ms - ?1 - 1) / ?3, sum(s.allocated * s.dur_ms),"
    " sum(s.fair_share * s.dur_ms), sum(s.guaranteed * s.dur_ms), sum(s.dur_ms)"
    " FROM samples s JOIN dims d ON d.id = s.dim_id"
    " WHERE s.t_ms > ?1 AND s.t_ms <= ?2 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

/* ?1 from, ?2 to, ?3 D0 and ?4 D1 (the whole UTC days inside, ms), ?5 and
 * ?7 the same as day numbers, ?6 days per bucket. */
static const char rollup_sql[] =
    "SELECT d.queue, d.team, x.b, sum(x.a), sum(x.f), sum(x.g), sum(x.w) FROM ("
    " SELECT s.dim_id AS dim, -1 AS b, s.allocated * s.dur_ms AS a,"
    "  s.fair_share * s.dur_ms AS f, s.guaranteed * s.dur_ms AS g, s.dur_ms AS w"
    "  FROM samples s WHERE s.t_ms > ?1 AND s.t_ms <= ?3"
    " UNION ALL"
    " SELECT sd.dim_id, (sd.day - ?5) / ?6, sd.allocated_mms, sd.fair_share_mms,"
    "  sd.guaranteed_mms, sd.sampled_ms FROM sample_day sd"
    "  WHERE sd.day >= ?5 AND sd.day < ?7 AND sd.sampled_ms > 0"
    " UNION ALL"
    " SELECT s.dim_id, 1000000000, s.allocated * s.dur_ms, s.fair_share * s.dur_ms,"
    "  s.guaranteed * s.dur_ms, s.dur_ms FROM samples s WHERE s.t_ms > ?4 AND s.t_ms <= ?2"
    ") x JOIN dims d ON d.id = x.dim GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

static int64_t floor_day(int64_t ms)
{
    int64_t q = ms / FAIR_LEDGER_DAY_MS;
    if (ms % FAIR_LEDGER_DAY_MS != 0 && ms < 0)
        q--;
    return q * FAIR_LEDGER_DAY_MS;
}

int fair_dashboard_samples(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status)
{
    struct fair_ledger *l = ledger;
    struct fair_query q;
    struct fair_error err = {0};
    sqlite3_stmt *st = NULL;
    int tz = 0, rc = 0;
    int64_t from = 0, to = 0;
    if (fair_query_parse(query, &q, &err))
        return bad_request(body, content_type, status, 400, err.msg);
    for (size_t i = 0; i < q.n; i++)
        if (strcmp(q.key[i], "from") && strcmp(q.key[i], "to") && strcmp(q.key[i], "tz")) {
            fair_error_set(&err, FAIR_EINVAL, "unknown query parameter \"%s\"", q.key[i]);
            return bad_request(body, content_type, status, 400, err.msg);
        }
    const char *v = fair_query_get(&q, "tz");
    if ((v && fair_report_tz_parse(v, &tz, &err)) ||
        fair_report_date_parse(fair_query_get(&q, "from"), tz, &from, &err) ||
        fair_report_date_parse(fair_query_get(&q, "to"), tz, &to, &err))
        return bad_request(body, content_type, status, 400, err.msg);
    if (to <= from || to - from > 5 * 366 * FAIR_LEDGER_DAY_MS)
        return bad_request(body, content_type, status, 400,
                           "to must be after from, at most 5 years later");
    /* Short periods: each of at most 300 buckets is the duration-weighted
     * mean of the raw samples in it. Longer ones: whole UTC days come from
     * the daily rollups (a few rows per queue and day instead of 1,440),
     * in buckets of whole days, and the partial days at the edges from the
     * raw samples, one bucket each. */
    int64_t D0 = floor_day(from + FAIR_LEDGER_DAY_MS - 1), D1 = floor_day(to);
    int rollup = to - from > FAIR_DASHBOARD_RAW_MAX_MS && D1 > D0;
    int64_t d0 = D0 / FAIR_LEDGER_DAY_MS, d1 = D1 / FAIR_LEDGER_DAY_MS;
    int64_t kdays = rollup ? (d1 - d0 + 299) / 300 : 0;
    int64_t step = rollup ? kdays * FAIR_LEDGER_DAY_MS : (to - from + 299) / 300;
    if (!rollup && step < fair_ledger_sample_period(l))
        step = fair_ledger_sample_period(l);
    int src = sqlite3_prepare_v2(fair_ledger_db(l), rollup ? rollup_sql : raw_sql, -1, &st, NULL);
    if (src != SQLITE_OK) {
        fair_ledger_sql_error(l, src, "queue samples", &err);
        return bad_request(body, content_type, status, 500, err.msg);
    }
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    if (rollup) {
        sqlite3_bind_int64(st, 3, D0);
        sqlite3_bind_int64(st, 4, D1);
        sqlite3_bind_int64(st, 5, d0);
        sqlite3_bind_int64(st, 6, kdays);
        sqlite3_bind_int64(st, 7, d1);
    } else {
        sqlite3_bind_int64(st, 3, step);
    }
    fair_buf_reset(body);
    rc = fair_buf_appendf(
        body, "{\"from_ms\":%" PRId64 ",\"to_ms\":%" PRId64 ",\"step_ms\":%" PRId64 ",\"queues\":[",
        from, to, step);
    char prev_q[FAIR_LEDGER_NAME_MAX + 1] = "", prev_t[FAIR_LEDGER_NAME_MAX + 1] = "";
    int nq = 0, first_point = 1;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *qn = (const char *)sqlite3_column_text(st, 0);
        const char *tn = (const char *)sqlite3_column_text(st, 1);
        int64_t dur = sqlite3_column_int64(st, 6);
        if (!qn || !tn || dur <= 0)
            continue;
        if (!nq || strcmp(qn, prev_q) || strcmp(tn, prev_t)) {
            rc = fair_buf_appends(body, nq ? "]}," : "");
            rc = rc || fair_buf_appends(body, "{\"queue\":") || fair_json_str(body, qn);
            rc = rc || fair_buf_appends(body, ",\"team\":") || fair_json_str(body, tn);
            rc = rc || fair_buf_appends(body, ",\"points\":[");
            snprintf(prev_q, sizeof(prev_q), "%s", qn);
            snprintf(prev_t, sizeof(prev_t), "%s", tn);
            nq++;
            first_point = 1;
        }
        int64_t b = (int64_t)sqlite3_column_int64(st, 2), t = from + b * step + step;
        if (rollup)
            t = b == EDGE_BEFORE           ? D0
                : b == EDGE_AFTER          ? to
                : D0 + (b + 1) * step < D1 ? D0 + (b + 1) * step
                                           : D1;
        rc = rc ||
             fair_buf_appendf(body, "%s[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
                              first_point ? "" : ",", t, (int64_t)sqlite3_column_int64(st, 3) / dur,
                              (int64_t)sqlite3_column_int64(st, 4) / dur,
                              (int64_t)sqlite3_column_int64(st, 5) / dur);
        first_point = 0;
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW) {
        fair_ledger_sql_error(l, src, "queue samples", &err);
        return bad_request(body, content_type, status, 500, err.msg);
    }
    rc = rc || fair_buf_appends(body, nq ? "]}]}\n" : "]}\n");
    if (rc)
        return bad_request(body, content_type, status, 500, "response too large");
    *content_type = "application/json";
    *status = 200;
    return 0;
}

int fair_dashboard_current(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status)
{
    struct fair_ledger *l = ledger;
    struct fair_error err = {0};
    sqlite3_stmt *st = NULL;
    int64_t hb = 0, t = 0;
    int rc = 0;
    if (query && *query)
        return bad_request(body, content_type, status, 400, "this endpoint takes no parameters");
    if (fair_ledger_meta_get(l, "heartbeat_ms", &hb, &err) ||
        fair_ledger_meta_get(l, "last_sample_ms", &t, &err))
        return bad_request(body, content_type, status, 500, err.msg);
    int src = sqlite3_prepare_v2(fair_ledger_db(l),
                                 "SELECT d.queue, d.project, d.team, s.allocated, s.guaranteed,"
                                 " s.fair_share, s.borrowed, s.lent, s.pending FROM samples s"
                                 " JOIN dims d ON d.id = s.dim_id WHERE s.t_ms = ?"
                                 " ORDER BY d.queue LIMIT 10000",
                                 -1, &st, NULL);
    if (src != SQLITE_OK) {
        fair_ledger_sql_error(l, src, "current queues", &err);
        return bad_request(body, content_type, status, 500, err.msg);
    }
    sqlite3_bind_int64(st, 1, t);
    fair_buf_reset(body);
    rc = fair_buf_appendf(body, "{\"heartbeat_ms\":%" PRId64 ",\"t_ms\":%" PRId64 ",\"queues\":[",
                          hb, t);
    int n = 0;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        rc = fair_buf_appends(body, n++ ? ",{\"queue\":" : "{\"queue\":");
        rc = rc || fair_json_str(body, (const char *)sqlite3_column_text(st, 0));
        rc = rc || fair_buf_appends(body, ",\"project\":") ||
             fair_json_str(body, (const char *)sqlite3_column_text(st, 1));
        rc = rc || fair_buf_appends(body, ",\"team\":") ||
             fair_json_str(body, (const char *)sqlite3_column_text(st, 2));
        static const char *const keys[] = {"allocated", "guaranteed", "fair_share",
                                           "borrowed",  "lent",       "pending"};
        for (int k = 0; k < 6 && !rc; k++)
            rc = fair_buf_appendf(body, ",\"%s\":%" PRId64, keys[k],
                                  (int64_t)sqlite3_column_int64(st, 3 + k));
        rc = rc || fair_buf_appends(body, "}");
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW) {
        fair_ledger_sql_error(l, src, "current queues", &err);
        return bad_request(body, content_type, status, 500, err.msg);
    }
    rc = rc || fair_buf_appends(body, "]}\n");
    if (rc)
        return bad_request(body, content_type, status, 500, "response too large");
    *content_type = "application/json";
    *status = 200;
    return 0;
}

static int report_route(void *ledger, const char *query, struct fair_buf *body,
                        const char **content_type, int *status)
{
    return fair_report_http(ledger, query, body, content_type, status);
}

int fair_dashboard_register(struct fair_httpd *srv, struct fair_querypool *pool)
{
    int rc;
    if ((rc = fair_httpd_route(srv, "GET", "/", fair_dashboard_page, NULL)) ||
        (rc = fair_querypool_route(pool, srv, "/api/v1/reports/gpu-hours", report_route)) ||
        (rc = fair_querypool_route(pool, srv, "/api/v1/queues/samples", fair_dashboard_samples)) ||
        (rc = fair_querypool_route(pool, srv, "/api/v1/queues/current", fair_dashboard_current)))
        return rc;
    return 0;
}
