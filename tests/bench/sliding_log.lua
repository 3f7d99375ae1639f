-- The usual Redis sliding-window-log limiter: one ZSET of admission times per key.
-- KEYS[1] = key, ARGV[1] = window ms, ARGV[2] = limit. Returns 1 if admitted, 0 if not.
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window_us = tonumber(ARGV[1]) * 1000
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now_us - window_us)
local n = redis.call('ZCARD', KEYS[1])
if n < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now_us, now_us .. ':' .. n)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0
