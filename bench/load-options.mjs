// The options both HTTP load generators take (bench/http-load.mjs with
// autocannon, bench/lean-load.mjs with raw sockets), so peer-ab and
// http-cpu can hand either the same arguments: the server, the pages and
// how they are drawn (page-draw.mjs), the lane's connections and length,
// and the Accept-Encoding asked.
export const LOAD_OPTIONS = {
    url: { type: 'string' },
    token: { type: 'string' },
    pages: { type: 'string' },
    random: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
    connections: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '4' },
    'accept-encoding': { type: 'string', default: 'identity' },
};
