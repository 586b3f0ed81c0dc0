-- wrk script: counts responses by status across threads and prints figures. With
-- QRT_BENCH_VARIED=1 in its environment, each request comes from another visitor: one of
-- 2,400 user agents (4 browsers, 120 versions, 5 systems), an address in one of 4,096 /24
-- networks (sent in X-Forwarded-For, for mod_remoteip), one of 2,000 places in 40 countries
-- (X-Bench-Country, X-Bench-City, set as mod_maxminddb's variables by SetEnvIf) and, three
-- times in four, one of 5,000 referers.
local threads = {}

function setup(thread)
    table.insert(threads, thread)
    thread:set("seed", #threads)
end

function init(args)
    counts = {}
    math.randomseed(seed or 1)
end

if os.getenv("QRT_BENCH_VARIED") == "1" then
    local systems = { "Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10_15_7",
                      "X11; Linux x86_64", "Linux; Android 14; Pixel 8",
                      "iPhone; CPU iPhone OS 17_4 like Mac OS X" }
    local countries = { "DE", "US", "FR", "JP", "BR", "IN", "GB", "NG", "CA", "AU", "IT",
                        "ES", "MX", "NL", "SE", "PL", "TR", "KR", "AR", "ZA", "EG", "ID",
                        "TH", "VN", "PH", "CL", "CO", "PE", "PT", "GR", "CZ", "AT", "CH",
                        "BE", "DK", "NO", "FI", "IE", "NZ", "KE" }
    local places, networks = {}, {}
    for _, c in ipairs(countries) do
        for k = 0, 49 do
            table.insert(places, { c, string.format("%s Town %d", c, k) })
        end
    end
    -- the same 4,096 networks in every thread (drawn before the thread's own seed)
    math.randomseed(4096)
    for k = 1, 4096 do
        networks[k] = string.format("%d.%d.%d", 11 + math.random(0, 179), math.random(0, 255),
                                    math.random(0, 255))
    end

    local function agent()
        local s, v, b = systems[math.random(5)], 10 + math.random(0, 119), math.random(4)
        if b == 1 then
            return string.format("Mozilla/5.0 (%s) AppleWebKit/537.36 (KHTML, like Gecko) "
                                 .. "Chrome/%d.0.0.0 Safari/537.36", s, v)
        elseif b == 2 then
            return string.format("Mozilla/5.0 (%s; rv:%d.0) Gecko/20100101 Firefox/%d.0",
                                 s, v, v)
        elseif b == 3 then
            return string.format("Mozilla/5.0 (%s) AppleWebKit/605.1.15 (KHTML, like Gecko) "
                                 .. "Version/%d.1 Safari/605.1.15", s, v)
        end
        return string.format("Mozilla/5.0 (%s) AppleWebKit/537.36 (KHTML, like Gecko) "
                             .. "Chrome/%d.0.0.0 Safari/537.36 Edg/%d.0.0.0", s, v, v)
    end

    function request()
        local p = places[math.random(#places)]
        local h = { ["User-Agent"] = agent(),
                    ["X-Forwarded-For"] = string.format("%s.%d", networks[math.random(4096)],
                                                        math.random(1, 254)),
                    ["X-Bench-Country"] = p[1], ["X-Bench-City"] = p[2] }
        if math.random(4) > 1 then
            h["Referer"] = string.format("https://ref%d.example/page", math.random(5000))
        end
        return wrk.format(nil, nil, h)
    end
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
