-- deckbuild: the footer as Quarto writes it. Quarto appends the `footer:` text to the body
-- as markdown blocks (::: {.footer .footer-default}, src/format/reveal/format-reveal.ts),
-- so raw HTML in it (<div>s a stylesheet lays out side by side) and several paragraphs
-- survive; pandoc's own metadata reading would make it one line of inlines. pandoc.py
-- passes the text as it was written (deckbuild-footer-markdown); the template prints the
-- blocks inside <div class="footer footer-default">.

function Meta(meta)
  local text = meta["deckbuild-footer-markdown"]
  if text == nil then return nil end
  local reader = pandoc.utils.stringify(meta["deckbuild-reader"] or "markdown")
  meta.footer = pandoc.MetaBlocks(pandoc.read(pandoc.utils.stringify(text), reader).blocks)
  meta["deckbuild-footer-markdown"] = nil
  return meta
end
