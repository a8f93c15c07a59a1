from diagnosis.templatetags.safe_markdown import markdown_to_html


def test_html_in_the_answer_is_escaped_before_any_markup():
    html = markdown_to_html('<script>alert("x")</script> **<b>粗</b>**')
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<strong>&lt;b&gt;粗&lt;/b&gt;</strong>" in html


def test_a_raw_html_block_stays_text():
    html = markdown_to_html('<div onclick="steal()">\n<img src=x onerror=alert(1)>\n</div>')
    assert "<div" not in html and "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_headings_lists_bold_and_code_become_tags():
    html = markdown_to_html("# 结论\n- 内存 **91%**\n- `jstat -gc`\n\n1. 查询日志\n2. 查看 GC")
    assert html.splitlines() == [
        "<h3>结论</h3>",
        "<ul>",
        "<li>内存 <strong>91%</strong></li>",
        "<li><code>jstat -gc</code></li>",
        "</ul>",
        "<ol>",
        "<li>查询日志</li>",
        "<li>查看 GC</li>",
        "</ol>",
    ]


def test_code_spans_and_fences_keep_their_text_literal():
    html = markdown_to_html("`**x**`\n```\n<tag> **y**\n```")
    assert "<code>**x**</code>" in html
    assert "<pre><code>&lt;tag&gt; **y**\n</code></pre>" in html


def test_links_and_images_stay_plain_text():
    html = markdown_to_html("[点我](javascript:alert(1)) ![x](http://evil/x.png) <http://evil>")
    assert "<a" not in html
    assert "<img" not in html
    assert "javascript:alert(1)" in html


def test_series_names_and_templates_keep_their_underscores_and_brackets():
    html = markdown_to_html('node_memory_MemAvailable_bytes{service="billing"} · timeout after <*>ms')
    assert 'node_memory_MemAvailable_bytes{service="billing"}' in html
    assert "after &lt;*&gt;ms" in html


def test_consecutive_lines_share_a_paragraph():
    assert markdown_to_html("第一行\n第二行\n\n第二段") == "<p>第一行<br>\n第二行</p>\n<p>第二段</p>"


def test_an_indented_item_stays_inside_the_list_above_it():
    html = markdown_to_html("- 发现\n  - 证据：「91%」\n- 第二条")
    assert html.splitlines() == [
        "<ul>",
        "<li>发现",
        "<ul>",
        "<li>证据：「91%」</li>",
        "</ul>",
        "</li>",
        "<li>第二条</li>",
        "</ul>",
    ]


def test_pipe_table_becomes_an_escaped_table_with_its_header_and_no_attributes():
    html = markdown_to_html("| 告警 | 服务 |\n|:---|---:|\n| <b>HighCPUUsage</b> | a\\|b |\n\n结论")
    assert "".join(html.splitlines()) == (
        "<table><thead><tr><th>告警</th><th>服务</th></tr></thead>"
        "<tbody><tr><td>&lt;b&gt;HighCPUUsage&lt;/b&gt;</td><td>a|b</td></tr></tbody></table>"
        "<p>结论</p>"
    )
