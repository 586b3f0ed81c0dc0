-- wrk script: counts responses by status across threads and prints figures.
local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    counts = {}
end

function response(status, headers, body)
    counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
    local total = {}
    for _, t in ipairs(threads) do
        local c = t:get("counts")
        for k, v in pairs(c) do
            total[k] = (total[k] or 0) + v
        end
    end
    for k, v in pairs(total) do
        io.write(string.format("STATUS %d %d\n", k, v))
    end
    io.write(string.format("RPS %.1f\n", summary.requests / (summary.duration / 1e6)))
    io.write(string.format("P99_MS %.3f\n", latency:percentile(99) / 1000.0))
    io.write(string.format("P50_MS %.3f\n", latency:percentile(50) / 1000.0))
end
