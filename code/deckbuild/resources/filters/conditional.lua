-- Conditional content, as Quarto's content-hidden filter reads it
-- (https://quarto.org/docs/authoring/conditional.html): a div or span with class
-- .content-visible is kept (its content, unwrapped) when every condition holds and dropped
-- otherwise; .content-hidden the other way round. Conditions: when-format / unless-format
-- (this deck is revealjs, also matched by html, html:js and presentation), when-profile /
-- unless-profile (the active Quarto profiles, metadata deckbuild-profiles, comma
-- separated), when-meta / unless-meta (a metadata key that is true).

local FORMATS = { revealjs = true, html = true, ["html:js"] = true, html5 = true,
                  presentation = true }
local profiles = {}
local meta_values = {}

local function split(s)
  local out = {}
  for item in string.gmatch(s or "", "[^,%s]+") do out[#out + 1] = item end
  return out
end

local function any_format(value)
  for _, f in ipairs(split(value)) do if FORMATS[f] then return true end end
  return false
end

local function any_profile(value)
  for _, p in ipairs(split(value)) do if profiles[p] then return true end end
  return false
end

local function meta_true(key)
  local v = meta_values
  for part in string.gmatch(key, "[^.]+") do
    if type(v) ~= "table" then return false end
    v = v[part]
  end
  if type(v) == "table" and v.t == "MetaBool" then return v.c end
  if type(v) == "boolean" then return v end
  if v ~= nil and pandoc.utils.stringify(v) == "true" then return true end
  return false
end

local TESTS = { format = any_format, profile = any_profile, meta = meta_true }

-- true when every when-* holds and no unless-* does
local function conditions_hold(attrs)
  local ok = true
  for key, value in pairs(attrs) do
    local kind, name = string.match(key, "^(%a+)%-(%a+)$")
    local test = TESTS[name]
    if test and kind == "when" then ok = ok and test(value)
    elseif test and kind == "unless" then ok = ok and not test(value) end
  end
  return ok
end

local function decide(el)
  local visible_class = el.classes:includes("content-visible")
  local hidden_class = el.classes:includes("content-hidden")
  if not visible_class and not hidden_class then return nil end
  local holds = conditions_hold(el.attributes)
  local shown = (visible_class and holds) or (hidden_class and not holds)
  if shown then return el.content end
  return {}
end

return {
  { Meta = function(m)
      meta_values = m
      for _, p in ipairs(split(m["deckbuild-profiles"] and pandoc.utils.stringify(m["deckbuild-profiles"]) or "")) do
        profiles[p] = true
      end
    end },
  { Div = decide, Span = decide },
}
