-- wrk's script for the benchmark kit (bench/lib/wrk.ts): each wrk thread cycles through the
-- request lists of the connections given to it (connection c goes to thread c mod threads),
-- every request pre-formatted once in init(). wrk checks no answer: the kit samples the same
-- requests through its own verifier before and after each wrk run.
-- Arguments after --: the request file (connection, method, path, body, then header name and
-- value pairs, tab-separated, one request a line) and the number of threads.

local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

local requests = {}
local n = 0
local i = 0

local function fields(line)
  local out = {}
  local start = 1
  while true do
    local tab = string.find(line, "\t", start, true)
    if tab == nil then
      out[#out + 1] = string.sub(line, start)
      return out
    end
    out[#out + 1] = string.sub(line, start, tab - 1)
    start = tab + 1
  end
end

function init(args)
  local threads = tonumber(args[2])
  for line in io.lines(args[1]) do
    local f = fields(line)
    if tonumber(f[1]) % threads == id then
      local headers = {}
      for k = 5, #f - 1, 2 do
        headers[f[k]] = f[k + 1]
      end
      local body = f[4]
      if body == "" then
        body = nil
      end
      n = n + 1
      requests[n] = wrk.format(f[2], f[3], headers, body)
    end
  end
  if n == 0 then
    error("no request for thread " .. id)
  end
end

function request()
  i = i % n + 1
  return requests[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"non2xx":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
